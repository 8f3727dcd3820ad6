-- common.lua: helpers prepended to every script of every adapter (luakit.Source, and
-- internal/engine for list and zset). It declares no keys.

-- Scripts read TIME before writing. Redis >= 5 replicates scripts by their effects, which
-- allows that; the call keeps 6.x configured for verbatim replication safe (a no-op on 7).
if redis.replicate_commands ~= nil then redis.replicate_commands() end

-- call_chunked runs redis.call(cmd, key, ...) over the flat list args, in slices of at most
-- 512 values (whole items of width values each): one call per slice instead of one per item,
-- while unpack stays far below Lua's stack limit however large the batch.
local function call_chunked(cmd, key, args, width)
  local step = 512 - 512 % width
  for i = 1, #args, step do
    redis.call(cmd, key, unpack(args, i, math.min(i + step - 1, #args)))
  end
end

-- now_ms is the Redis clock in milliseconds: the only clock relq trusts.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
