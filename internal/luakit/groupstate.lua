-- groupstate.lua: helpers over the per-group keys the list and zset adapters lay out alike,
-- prepended to their scripts after common.lua. It declares no keys: k.holders (HASH id ->
-- consumer), k.attempts (HASH id -> deliveries so far), k.dead (ZSET id -> dead-lettered at)
-- and k.reasons (HASH id -> dead-letter reason) are the calling script's.

-- holds reports whether consumer holds attempt of id: the fencing check. A lease without a
-- holder (a list orphan lease) is held by nobody.
local function holds(k, id, consumer, attempt)
  return redis.call('HGET', k.holders, id) == consumer and redis.call('HGET', k.attempts, id) == attempt
end

-- bury moves id (already out of ready and pending) to the dead-letter store.
local function bury(k, id, reason, now)
  redis.call('ZADD', k.dead, now, id)
  redis.call('HSET', k.reasons, id, reason)
end
