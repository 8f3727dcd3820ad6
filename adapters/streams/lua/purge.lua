-- purge.lua: delete dead letters of a group for good: the ids given, or up to N of the
-- oldest; and, with delete-on-ack retention, the entries no group needs any more. An id given
-- that is not a dead letter of the group (unknown, or requeued and now in the PEL) is skipped:
-- only the dead-letter stream and its indexes are written, so the group's PEL, retry schedule
-- and the stream itself (but for delete-on-ack) are not touched.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> dead (STREAM) the group's dead letters
-- KEYS[3] -> dead_index (HASH id -> dead-letter entry id) the group's
-- KEYS[4] -> dead_refs (HASH) the topic's
-- KEYS[5] -> dead_order (ZSET) the group's dead letters in order, for paging
-- ARGV[1] -> N: with no ids after ARGV[2], delete the N oldest dead letters
-- ARGV[2] -> '1': delete entries once every group is done with them
-- ARGV[3..] -> ids to delete
-- Per call: one XRANGE of the dead letters or one HMGET of dead_index, then one write to each
-- of dead, dead_index and dead_order and one HINCRBY of dead_refs per id; with delete-on-ack,
-- unneeded's reads per group and one XDEL.
-- Returns the number deleted.

local k = {stream = KEYS[1], dead = KEYS[2], dead_index = KEYS[3], dead_refs = KEYS[4],
  dead_order = KEYS[5]}
drain_ok(k.dead_index)
local dls, ids = {}, {}
if #ARGV == 2 then
  for _, e in ipairs(redis.call('XRANGE', k.dead, '-', '+', 'COUNT', ARGV[1])) do
    dls[#dls + 1] = {e[2][2], e[1]}
    ids[#ids + 1] = e[2][2]
  end
else
  local asked, seen = {}, {}
  for i = 3, #ARGV do asked[#asked + 1] = ARGV[i] end
  for i, dl in ipairs(call_ids('HMGET', k.dead_index, {}, asked)) do
    local id = asked[i]
    if dl and not seen[id] then
      seen[id] = true
      dls[#dls + 1] = {id, dl}
      ids[#ids + 1] = id
    end
  end
end
forget(k, dls)
if ARGV[2] == '1' and #ids > 0 then
  xdel(k, unneeded(k, ids, groups_of(k)))
end
if redis.call('XLEN', k.dead) == 0 then
  redis.call('DEL', k.dead, k.dead_index, k.dead_order)
end
return #dls
