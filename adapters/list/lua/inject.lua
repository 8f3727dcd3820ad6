-- inject.lua: FOR TESTS ONLY (Faults.InjectCorrupt). Store raw bytes, bypassing the codec, as a
-- new message ready for one group, and register the group.
--
-- KEYS[1] -> {p:t}:seq (STRING)     KEYS[4] -> {p:t}:groups (SET)
-- KEYS[2] -> {p:t}:bodies (HASH)    KEYS[5] -> ready (LIST)
-- KEYS[3] -> {p:t}:refs (HASH)      KEYS[6] -> ready_at (ZSET)
-- KEYS[7] -> counters (HASH)
-- ARGV[1] -> group
-- ARGV[2] -> raw bytes
-- Returns the new delivery ID.

local id = string.format('%d', redis.call('INCR', KEYS[1]))
redis.call('HSET', KEYS[2], id, ARGV[2])
redis.call('HSET', KEYS[3], id, 1)
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('LPUSH', KEYS[5], id)
redis.call('ZADD', KEYS[6], now_ms(), id)
redis.call('HINCRBY', KEYS[7], 'published', 1)
return id
