-- requeue.lua: move dead letters back to the back of ready with their attempts reset: the ids
-- given, or the N oldest. A dead letter whose body is gone is dropped instead.
--
-- KEYS[1] -> ready (LIST)          KEYS[4] -> attempts (HASH)
-- KEYS[2] -> dead (ZSET)           KEYS[5] -> {p:t}:bodies (HASH)
-- KEYS[3] -> dead_reasons (HASH)
-- ARGV[1] -> N: with no ids after it, requeue the N oldest dead letters
-- ARGV[2..] -> ids to requeue
-- Returns {dead letters looked at, requeued}.

local k = {ready = KEYS[1], dead = KEYS[2], reasons = KEYS[3], attempts = KEYS[4],
  bodies = KEYS[5]}
local ids = {}
if #ARGV == 1 then
  ids = redis.call('ZRANGE', k.dead, 0, tonumber(ARGV[1]) - 1)
else
  for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local now = now_ms()
local seen, requeued = 0, 0
for _, id in ipairs(ids) do
  if redis.call('ZREM', k.dead, id) == 1 then
    seen = seen + 1
    redis.call('HDEL', k.reasons, id)
    redis.call('HDEL', k.attempts, id)
    if redis.call('HEXISTS', k.bodies, id) == 1 then
      redis.call('LPUSH', k.ready, entry(id, now))
      requeued = requeued + 1
    end
  end
end
return {seen, requeued}
