-- purge.lua: delete dead letters of a group for good: the ids given, or up to N of the
-- oldest; and each body once no group holds it any more. An id given that is not a dead
-- letter of the group (unknown, or requeued and now ready, delayed or pending) is skipped:
-- only the dead-letter store is read and written, so nothing else of the group is touched.
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> N: with no ids after it, delete the N oldest dead letters
-- ARGV[2..] -> ids to delete
-- Per call: one ZRANGE of the N oldest or one ZMSCORE of the ids, then one ZREM and one HDEL,
-- and unref's HMGET and writes: O(ids · log N).
-- Returns the number deleted.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local ids = chosen_dead(k)
if #ids == 0 then return 0 end
call_chunked('ZREM', k.dead, ids, 1)
call_chunked('HDEL', k.info, ids, 1)
unref(k, ids)
return #ids
