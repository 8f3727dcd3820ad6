-- deletetopic.lua: delete every key of a topic: its stream (with every consumer group on it,
-- another program's too), relq's keys of the topic and of each group, and the tombs of
-- unfinished group deletes. The caller read the groups to name their keys; if the stream or
-- the deleting SET names a group it did not pass, nothing is deleted and it reads again.
--
-- Each group passed leaves a tombstone for ARGV[1] ms (luakit's common.lua), so that its
-- running subscriptions stop rather than register it again.
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- KEYS[9] -> the topic's tombs (ZSET), which is kept
-- KEYS[10..] -> the own keys (lib.lua's group_keys) of each group of ARGV, 14 per group
-- ARGV[1] -> the tombstones' life in ms
-- ARGV[2..] -> the groups
-- Returns the number of keys deleted (the tombstones not counted), or -1 when the groups
-- changed.

local k = topic_keys()
local passed = {}
for i = 2, #ARGV do passed[ARGV[i]] = true end
for _, g in ipairs(groups_of(k)) do
  if not passed[g.name] then return -1 end
end
for _, g in ipairs(redis.call('SMEMBERS', k.deleting)) do
  if not passed[g] then return -1 end
end
local now = now_ms()
for i = 2, #ARGV do tombstone(KEYS[9], ARGV[i], now, tonumber(ARGV[1])) end
local doomed = {unpack(KEYS, 1, 8)}
for i = 10, #KEYS do doomed[#doomed + 1] = KEYS[i] end
local n = 0
for i = 1, #doomed, 500 do
  n = n + redis.call('UNLINK', unpack(doomed, i, math.min(i + 499, #doomed)))
end
return n
