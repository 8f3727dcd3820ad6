-- registry.lua: the check at the start of a publish.lua that is given the groups to route to,
-- with their keys (list, zset; backendkit.Registry is the Go side), prepended to the scripts
-- of those adapters after common.lua. It declares no keys.

-- stale_groups checks names, the groups the caller routes to, against the topic's registry SET
-- key. With no group registered, names must be exactly {default}, which is then registered, so
-- nothing published is dropped. It returns nil when names are right; else, having written
-- nothing, the reply for the caller to retry with: {0, registered groups...} ({0} when none is).
local function stale_groups(key, default, names)
  local card = redis.call('SCARD', key)
  if card == 0 then
    if #names ~= 1 or names[1] ~= default then return {0} end
    redis.call('SADD', key, default)
    return nil
  end
  local same = card == #names
  for i = 1, #names do
    if not same then break end
    same = redis.call('SISMEMBER', key, names[i]) == 1
  end
  if same then return nil end
  local m = redis.call('SMEMBERS', key)
  table.insert(m, 1, 0)
  return m
end

-- batch_done returns the reply an earlier run of this very publish left in its batch key, or
-- nil. The Redis client resends a command whose reply it lost (a connection dropped after
-- Redis ran it); the resent script then stores nothing a second time and returns the same IDs.
local function batch_done(batch)
  local last = redis.call('GET', batch)
  if last then return {1, tonumber(last)} end
  return nil
end

-- batch_remember records a publish's reply under its batch key for a minute, longer than
-- any client retry.
local function batch_remember(batch, last)
  redis.call('SET', batch, last, 'PX', 60000)
end
