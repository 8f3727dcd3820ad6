-- droptopic.lua: delete every key of a topic: its stream (with every consumer group on it,
-- another program's too), relq's keys of the topic and of each group, and the tombs of
-- unfinished group deletes. The caller read the groups to name their keys; if the stream or
-- the deleting SET names a group it did not pass, nothing is deleted and it reads again.
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- KEYS[9..] -> the own keys (lib.lua's group_keys) of each group of ARGV, 12 per group
-- ARGV[1..] -> the groups
-- Returns the number of keys deleted, or -1 when the groups changed.

local k = topic_keys()
local passed = {}
for _, g in ipairs(ARGV) do passed[g] = true end
for _, g in ipairs(groups_of(k)) do
  if not passed[g.name] then return -1 end
end
for _, g in ipairs(redis.call('SMEMBERS', k.deleting)) do
  if not passed[g] then return -1 end
end
local n = 0
for i = 1, #KEYS, 500 do
  local slice = {unpack(KEYS, i, math.min(i + 499, #KEYS))}
  n = n + redis.call('UNLINK', unpack(slice))
end
return n
