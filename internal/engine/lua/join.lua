-- join.lua: register consumer as a live member of an ephemeral group until now + TTL,
-- registering the group when it is new (the topic's first group takes its backlog). While
-- every group of the topic is ephemeral, the topic's keys and the group's expire TTL after the
-- latest membership's deadline (meta's expire field, which the other scripts give the keys
-- they create: engine.lua's keep_expiry), so a topic whose processes all died leaves no key;
-- the slack of one TTL lets a surviving member's Reclaim delete a dead group, and free the
-- bodies it shared, before its keys expire. Otherwise the group's keys do not expire.
--
-- KEYS -> the topic's 8 keys, the backlog's store keys, then the group's keys (engine.lua's
--         keys_at layout)
-- ARGV[1] -> group
-- ARGV[2] -> consumer
-- ARGV[3] -> TTL in ms
-- ARGV[4] -> '1' for a renewal, which never registers the group
-- Returns {version, reborn, groups...} (lifecycle.lua's registry_reply), for the caller's publish cache; or an error reply: the group
-- is durable (RELQDURABLE), a renewal's group is not registered (engine.lua's gone: RELQGONE
-- under a tombstone, else RELQLOST), or a layout this code cannot read.

local S = #STORE_KEY_NAMES
local bk = store_keys_at(TOPIC_KEYS + 1)
local k = keys_at(TOPIC_KEYS + S + 1)
local group, ttl = ARGV[1], tonumber(ARGV[3])
local meta = redis.call('HMGET', k.meta, 'layout', 'seq', 'ver')
check_layout(meta[1])
if redis.call('EXISTS', k.legacy) == 1 then return layout_error(1) end
local ver = meta[3] or '0'
local v = redis.call('HGET', k.registry, group)
if v then
  local _, _, ephemeral = reg_parse(v)
  if not ephemeral then return redis.error_reply('RELQDURABLE group is registered as durable') end
elseif ARGV[4] == '1' then
  return gone(k, group)
else
  ver = register(k, bk, group, topic_seq(meta[2]), true)
end
add_member(k, group, ARGV[2], ttl, now_ms())
return registry_reply(k.meta, k.registry, ver)
