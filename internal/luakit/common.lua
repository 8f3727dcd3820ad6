-- common.lua: helpers prepended to every script of every adapter (see luakit's Source), before
-- the adapter's own lua/lib.lua. It declares no keys.

-- Scripts read TIME before writing. Redis >= 5 replicates scripts by their effects, which
-- allows that; the call keeps 6.x configured for verbatim replication safe (a no-op on 7).
if redis.replicate_commands ~= nil then redis.replicate_commands() end

-- now_ms is the Redis clock in milliseconds: the only clock relq trusts.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
