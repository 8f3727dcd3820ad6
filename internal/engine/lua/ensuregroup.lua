-- ensuregroup.lua: register a durable group on a topic, so every later publish routes to it.
-- Idempotent: a group already registered (durable or ephemeral) writes nothing, so
-- re-registering works on a full Redis. A new group sets a new registry version, which makes
-- publishers with a cached registry retry with the new one; the topic's first group takes its
-- backlog; and the topic's keys no longer expire (the backlog's TTL, or every group having
-- been ephemeral).
--
-- KEYS -> the topic's 8 keys (engine.lua's keys_at), the backlog's store keys, the group's
--         store keys (both in STORE_KEY_NAMES order)
-- ARGV[1] -> group
-- Returns {version, reborn, groups...} (lifecycle.lua's registry_reply), for the caller's publish cache; or an error reply for a layout
-- this code cannot read.

local S = #STORE_KEY_NAMES
local bk = store_keys_at(TOPIC_KEYS + 1)
local k = store_keys_at(TOPIC_KEYS + S + 1)
k.registry, k.tombs = KEYS[4], KEYS[8]
local meta = redis.call('HMGET', k.meta, 'layout', 'seq', 'ver', 'expire')
check_layout(meta[1])
-- Every time, not only for a new topic: an old build still running writes layout-1 keys.
if redis.call('EXISTS', KEYS[5]) == 1 then return layout_error(1) end
local ver = meta[3] or '0'
if redis.call('HEXISTS', k.registry, ARGV[1]) == 0 then
  ver = register(k, bk, ARGV[1], topic_seq(meta[2]), false)
  if meta[4] then redis.call('HDEL', k.meta, 'expire') end
  for _, key in ipairs(topic_keys()) do redis.call('PERSIST', key) end
end
return registry_reply(k.meta, k.registry, ver)
