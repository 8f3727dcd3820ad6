-- groupstate.lua: helpers over the per-group keys the list and zset adapters lay out alike,
-- prepended to their scripts after common.lua. It declares no keys: k.holders (HASH id ->
-- consumer), k.attempts (HASH id -> deliveries so far), k.dead (ZSET id -> dead-lettered at)
-- and k.reasons (HASH id -> dead-letter reason) are the calling script's, as are the topic's
-- k.bodies (HASH id -> envelope), k.refs (HASH id -> groups holding it, written only when more
-- than one) and, for zset, k.prio (HASH id -> priority).

-- holder returns the consumer in a holders value: list stores "consumer:since" (":since" for
-- an orphan lease, held by nobody), zset the bare consumer. Consumer names hold no ':'.
local function holder(v)
  if not v then return nil end
  return string.match(v, '^([^:]*):') or v
end

-- holds reports whether consumer holds attempt of id: the fencing check. A lease without a
-- holder (a list orphan lease) is held by nobody.
local function holds(k, id, consumer, attempt)
  return holder(redis.call('HGET', k.holders, id)) == consumer and redis.call('HGET', k.attempts, id) == attempt
end

-- unref drops one group's reference to a message and deletes its body (and priority) with the
-- last one. A missing count means one holder: publish writes refs only for fan-out.
local function unref(k, id)
  local n = tonumber(redis.call('HGET', k.refs, id) or '1')
  if n > 1 then
    redis.call('HINCRBY', k.refs, id, -1)
    return
  end
  if n == 1 then redis.call('HDEL', k.refs, id) end
  redis.call('HDEL', k.bodies, id)
  if k.prio then redis.call('HDEL', k.prio, id) end
end

-- bury moves id (already out of ready and pending) to the dead-letter store.
local function bury(k, id, reason, now)
  redis.call('ZADD', k.dead, now, id)
  redis.call('HSET', k.reasons, id, reason)
end
