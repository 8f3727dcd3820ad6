-- inject.lua: FOR TESTS ONLY (Faults.InjectCorrupt). Append an entry with arbitrary fields,
-- bypassing the codec, as a foreign writer would, creating the group first if missing.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> published (STRING) the topic's publish counter
-- KEYS[3] -> the group's counters (HASH)
-- ARGV[1] -> group
-- ARGV[2..] -> field, value, ...
-- Returns the entry's ID.

local k = {stream = KEYS[1], published = KEYS[2], counters = KEYS[3], group = ARGV[1]}
create_group(k, '$', 0)
local id = redis.call('XADD', k.stream, '*', unpack(ARGV, 2))
redis.call('INCR', k.published)
return id
