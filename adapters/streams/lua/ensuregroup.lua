-- ensuregroup.lua: create a consumer group on a topic's stream (and the stream), unless it
-- exists; record the group's publish-counter base.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> published (STRING) the topic's publish counter
-- KEYS[3] -> the group's counters (HASH)
-- ARGV[1] -> group
-- ARGV[2] -> start: '0' (from the oldest retained entry) or '$' (from the next one)
-- Returns 1 when the group was created, 0 when it existed.

local k = {stream = KEYS[1], published = KEYS[2], counters = KEYS[3], group = ARGV[1]}
-- An existing group is found with reads only, so registering it again works on a full Redis,
-- which refuses XGROUP CREATE before it could answer BUSYGROUP.
for _, g in ipairs(groups_of(k)) do
  if g.name == k.group then return 0 end
end
return create_group(k, ARGV[2])
