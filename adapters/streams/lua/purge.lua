-- purge.lua: delete up to N of a group's oldest dead letters for good, and, with
-- delete-on-ack retention, the entries no group needs any more.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> dead (STREAM) the group's dead letters
-- KEYS[3] -> dead_index (HASH) the group's
-- KEYS[4] -> dead_refs (HASH) the topic's
-- KEYS[5] -> dead_order (ZSET) the group's dead letters in order, for paging
-- ARGV[1] -> N
-- ARGV[2] -> '1': delete entries once every group is done with them
-- Returns the number deleted.

local k = {stream = KEYS[1], dead = KEYS[2], dead_index = KEYS[3], dead_refs = KEYS[4],
  dead_order = KEYS[5]}
drain_ok(k.dead_index)
local page = redis.call('XRANGE', k.dead, '-', '+', 'COUNT', ARGV[1])
local dls, ids = {}, {}
for _, e in ipairs(page) do
  dls[#dls + 1] = {e[2][2], e[1]}
  ids[#ids + 1] = e[2][2]
end
forget(k, dls)
if ARGV[2] == '1' and #ids > 0 then
  xdel(k, unneeded(k, ids, groups_of(k)))
end
if redis.call('XLEN', k.dead) == 0 then
  redis.call('DEL', k.dead, k.dead_index, k.dead_order)
end
return #page
