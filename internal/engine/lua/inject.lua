-- inject.lua: FOR TESTS ONLY (Faults.InjectCorrupt). Store raw bytes, bypassing the codec, as a
-- new message ready for one group, and register the group.
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> raw bytes
-- Returns the new delivery ID.

local k = keys_at(TOPIC_KEYS + 1)
local seq = topic_seq(redis.call('HGET', k.meta, 'seq'))
if redis.call('HSETNX', k.registry, ARGV[1], seq) == 1 then
  redis.call('HSET', k.meta, 'ver', new_version(), 'layout', LAYOUT, 'seq', seq)
end
local id = ms(redis.call('HINCRBY', k.meta, 'seq', 1))
redis.call('HSET', k.bodies, id, ARGV[2])
store_push(k, {{id = id, delay = 0, prio = 0}}, now_ms(), 'force')
return id
