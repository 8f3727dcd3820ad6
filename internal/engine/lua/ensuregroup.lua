-- ensuregroup.lua: register a group on a topic, so every later publish routes to it.
-- Idempotent. A new group sets a new registry version, which makes publishers with a cached
-- registry retry with the new one.
--
-- KEYS[1..5] -> the topic's meta, bodies, refs, registry, legacy (see publish.lua)
-- ARGV[1] -> group
-- Returns {version, groups...}, for the caller's publish cache; or an error reply for a layout
-- this code cannot read.

local meta = redis.call('HMGET', KEYS[1], 'layout', 'seq', 'ver')
check_layout(meta[1])
-- Every time, not only for a new topic: an old build still running writes layout-1 keys.
if redis.call('EXISTS', KEYS[5]) == 1 then return layout_error(1) end
local ver = meta[3] or '0'
-- A group already registered writes nothing, so re-registering works on a full Redis.
if redis.call('HEXISTS', KEYS[4], ARGV[1]) == 0 then
  redis.call('HSET', KEYS[4], ARGV[1], meta[2] or '0')
  ver = new_version()
  redis.call('HSET', KEYS[1], 'ver', ver, 'layout', LAYOUT)
end
local reply = {ver}
for _, g in ipairs(redis.call('HKEYS', KEYS[4])) do reply[#reply + 1] = g end
return reply
