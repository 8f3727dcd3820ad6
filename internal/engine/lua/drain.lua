-- drain.lua: free up to N more ids of a deleted group's trash (see deletegroup.lua), and
-- delete the trash keys once they hold nothing. When the topic has neither a group nor a
-- backlog any more, the trash keys are deleted at once, and with the last trash the topic's.
--
-- KEYS -> the topic's 8 keys, then the trash keys (engine.lua's keys_at layout)
-- ARGV[1] -> the trash id
-- ARGV[2] -> N
-- Returns 1 when this trash is gone, 0 when more is left.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
if not redis.call('ZSCORE', k.trash, ARGV[1]) then return 1 end
local empty = topic_gone(k)
if not empty and not free(k, tonumber(ARGV[2])) then return 0 end
unlink(k.group)
redis.call('ZREM', k.trash, ARGV[1])
if empty and redis.call('EXISTS', k.trash) == 0 then unlink(topic_keys()) end
return 1
