-- deletemessage.lua: delete one message of a group for good, in any state; other groups keep
-- their copy. A pending or dead message goes at once, and its body with the last group that
-- held it; a holder's later ack, nack or extend finds no record and is stale. Where it sits
-- in a store that cannot remove it by id, it is marked ACKED and the claim that reaches it
-- drops it (store_delete).
--
-- KEYS -> the topic's 5 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> id
-- ARGV[3] -> depth: how far a search may look through a store it cannot search by id
-- Returns 1; or an error reply RELQNOGROUP, RELQNOTFOUND or RELQDEEP.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
if redis.call('HEXISTS', k.registry, ARGV[1]) == 0 then return admin_error('NOGROUP') end
local it = admin_find(k, ARGV[2], now_ms(), tonumber(ARGV[3]), store_find)
if it == 'deep' then return admin_error('DEEP') end
if not it then return admin_error('NOTFOUND') end
if it.state == 'dead' then
  redis.call('ZREM', k.dead, it.id)
  redis.call('HDEL', k.info, it.id)
  unref(k, {it.id})
elseif it.state == 'pending' and not it.where then
  unpend(k, {it.id})
  unref(k, {it.id})
else
  store_delete(k, it)
end
keep_expiry(k) -- retries, marked ACKED, expires with an ephemeral group's
return 1
