-- purge.lua: delete up to N of a group's oldest dead letters, and each body once no group
-- holds it any more.
--
-- KEYS -> the topic's 7 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> N
-- Returns the number deleted.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local ids = redis.call('ZRANGE', k.dead, 0, tonumber(ARGV[1]) - 1)
if #ids == 0 then return 0 end
call_chunked('ZREM', k.dead, ids, 1)
call_chunked('HDEL', k.info, ids, 1)
unref(k, ids)
return #ids
