-- deadletters.lua: read one page of a group's dead letters, oldest first. Read-only.
--
-- The dead-letter stream cannot be read from a rank, so its entry IDs are also kept in
-- dead_order (zero-padded, all scored 0: string order is stream order), where ZRANGE finds a
-- page by rank in O(log N). The index holds every dead letter, so the stream between the
-- page's first and last IDs is the page: one XRANGE reads it; an ID it did not return (the
-- stream holds an entry the index does not, which relq never writes) is read alone. A page
-- costs O(count + log N) whatever its offset.
--
-- KEYS[1] -> dead (STREAM) the group's dead letters
-- KEYS[2] -> dead_order (ZSET padded dead-letter entry id -> 0) the group's
-- ARGV[1] -> offset
-- ARGV[2] -> count
-- Returns the dead-letter entries' field lists: _relq_id, id, _relq_reason, reason,
-- _relq_attempts, n, _relq_dead_at, ms, _relq_topic, topic, _relq_group, group, then the
-- entry's own fields.

local offset, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local ids = {}
for i, m in ipairs(redis.call('ZRANGE', KEYS[2], offset, offset + count - 1)) do
  ids[i] = unpad(m)
end
local out = {}
if #ids == 0 then return out end
local got = {}
for _, e in ipairs(redis.call('XRANGE', KEYS[1], ids[1], ids[#ids], 'COUNT', #ids)) do
  got[e[1]] = e[2]
end
for _, id in ipairs(ids) do
  local f = got[id]
  if not f then
    local e = redis.call('XRANGE', KEYS[1], id, id)
    f = e[1] and e[1][2]
  end
  if f then out[#out + 1] = f end
end
return out
