-- message.lua: one message of a group, wherever it is (inspect.lua's locate). Read-only.
--
-- KEYS[1..16] -> inspect.lua's inspect_keys
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> the orphan lease in ms (a consumer without a lease record)
-- ARGV[4] -> id
-- Returns inspect.lua's msg, false when the group does not hold it, or an error reply starting
-- 'NOGROUP relq:' when the group is not registered.

local k = inspect_keys()
k.group, k.parked = ARGV[1], ARGV[2]
local me = find_group(k)
if not me then return redis.error_reply('NOGROUP relq: group not registered') end
local now, id = now_ms(), ARGV[4]
local at = locate(k, me, id, now)
if not at then return false end
if at.kind == 'dead' then return dead_msg(at.rec) end
if at.kind == 'pending' then return pending_msg(k, id, at.consumer, at.count, at.idle, now, tonumber(ARGV[3])) end
if at.kind == 'parked' then return waiting_msg(k, id, at.count, at.due, now) end
return waiting_msg(k, id, 0, at.due, now, at.fields)
