-- runmessage.lua: make a delayed message of a group due now (store_run).
--
-- KEYS -> the topic's 5 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> id
-- ARGV[3] -> depth: how far a search may look through a store it cannot search by id
-- Returns 1; or an error reply RELQNOGROUP, RELQNOTFOUND, RELQNOTDELAYED or RELQDEEP.

local k = keys_at(TOPIC_KEYS + 1)
if redis.call('HEXISTS', k.registry, ARGV[1]) == 0 then return admin_error('NOGROUP') end
local now = now_ms()
local it = admin_find(k, ARGV[2], now, tonumber(ARGV[3]), store_find)
if it == 'deep' then return admin_error('DEEP') end
if not it then return admin_error('NOTFOUND') end
if not store_run(k, it, now) then return admin_error('NOTDELAYED') end
keep_expiry(k) -- a store key created again expires with an ephemeral group's
return 1
