-- inject.lua: FOR TESTS ONLY (Faults.InjectCorrupt). Store raw bytes, bypassing the codec, as a
-- new message ready for one group, and register the group.
--
-- KEYS[1] -> {p:t}:seq (STRING)     KEYS[3] -> {p:t}:groups (SET)
-- KEYS[2] -> {p:t}:bodies (HASH)    KEYS[4] -> ready (LIST)
-- KEYS[5] -> counters (HASH)
-- ARGV[1] -> group
-- ARGV[2] -> raw bytes
-- Returns the new delivery ID.

local id = string.format('%d', redis.call('INCR', KEYS[1]))
redis.call('HSET', KEYS[2], id, ARGV[2])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('LPUSH', KEYS[4], entry(id, now_ms()))
redis.call('HINCRBY', KEYS[5], 'published', 1)
return id
