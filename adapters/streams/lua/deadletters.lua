-- deadletters.lua: read one page of a group's dead letters, oldest first. Read-only.
--
-- KEYS[1] -> dead (STREAM) the group's dead letters
-- ARGV[1] -> offset
-- ARGV[2] -> count
-- Returns the dead-letter entries' field lists: _relq_id, id, _relq_reason, reason,
-- _relq_attempts, n, _relq_dead_at, ms, _relq_topic, topic, _relq_group, group, then the
-- entry's own fields.

local offset, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local page = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', offset + count)
local out = {}
for i = offset + 1, #page do out[#out + 1] = page[i][2] end
return out
