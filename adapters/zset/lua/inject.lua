-- inject.lua: FOR TESTS ONLY (Faults.InjectCorrupt). Store raw bytes, bypassing the codec, as a
-- new message of priority 0 due now for one group, and register the group.
--
-- KEYS[1] -> {p:t}:seq (STRING)     KEYS[4] -> ready (ZSET)
-- KEYS[2] -> {p:t}:bodies (HASH)    KEYS[5] -> counters (HASH)
-- KEYS[3] -> {p:t}:groups (SET)     KEYS[6] -> wake (LIST)
-- ARGV[1] -> group
-- ARGV[2] -> raw bytes
-- Returns the new delivery ID.

local id = string.format('%d', redis.call('INCR', KEYS[1]))
redis.call('HSET', KEYS[2], id, ARGV[2])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], now_ms(), member(id, 0))
redis.call('HINCRBY', KEYS[5], 'published', 1)
wake(KEYS[6])
return id
