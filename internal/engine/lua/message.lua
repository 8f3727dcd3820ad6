-- message.lua: show one message of a group, wherever it is. Read-only. Pending, dead and
-- (list) delayed are found by id in O(log N); the rest as the store's store_find says.
--
-- KEYS -> the topic's 5 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> id
-- ARGV[3] -> depth: how far a search may look through a store it cannot search by id
-- Returns {now ms, the message's 11 values (admin_out)}; or an error reply RELQNOGROUP,
-- RELQNOTFOUND or RELQDEEP.

local k = keys_at(TOPIC_KEYS + 1)
if redis.call('HEXISTS', k.registry, ARGV[1]) == 0 then return admin_error('NOGROUP') end
local now = now_ms()
local it = admin_find(k, ARGV[2], now, tonumber(ARGV[3]), store_find)
if it == 'deep' then return admin_error('DEEP') end
if not it then return admin_error('NOTFOUND') end
local out = {now}
admin_out(k, {it}, admin_prio, out)
return out
