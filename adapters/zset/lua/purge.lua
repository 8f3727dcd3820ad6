-- purge.lua: delete up to N of a group's oldest dead letters, and each body (with its priority)
-- once no group holds it any more.
--
-- KEYS[1] -> dead (ZSET)             KEYS[4] -> {p:t}:bodies (HASH)
-- KEYS[2] -> dead_reasons (HASH)     KEYS[5] -> {p:t}:refs (HASH)
-- KEYS[3] -> attempts (HASH)         KEYS[6] -> {p:t}:priorities (HASH)
-- ARGV[1] -> N
-- Returns the number deleted.

local k = {dead = KEYS[1], reasons = KEYS[2], attempts = KEYS[3], bodies = KEYS[4], refs = KEYS[5],
  prio = KEYS[6]}
local ids = redis.call('ZRANGE', k.dead, 0, tonumber(ARGV[1]) - 1)
for _, id in ipairs(ids) do
  redis.call('ZREM', k.dead, id)
  redis.call('HDEL', k.reasons, id)
  redis.call('HDEL', k.attempts, id)
  unref(k, id)
end
return #ids
