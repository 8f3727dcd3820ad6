-- purge.lua: delete up to N of a group's oldest dead letters for good, and, with
-- delete-on-ack retention, the entries no group needs any more.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> dead (STREAM) the group's dead letters
-- KEYS[3] -> dead_index (HASH) the group's
-- KEYS[4] -> dead_refs (HASH) the topic's
-- ARGV[1] -> N
-- ARGV[2] -> '1': delete entries once every group is done with them
-- Returns the number deleted.

local k = {stream = KEYS[1], dead = KEYS[2], dead_index = KEYS[3], dead_refs = KEYS[4]}
local page = redis.call('XRANGE', k.dead, '-', '+', 'COUNT', ARGV[1])
local ids = {}
for _, e in ipairs(page) do
  local id = e[2][2]
  redis.call('XDEL', k.dead, e[1])
  redis.call('HDEL', k.dead_index, id)
  unref(k, id)
  ids[#ids + 1] = id
end
if ARGV[2] == '1' and #ids > 0 then
  local groups = groups_of(k)
  local gone = {}
  for _, id in ipairs(ids) do
    if unneeded(k, id, groups) then gone[#gone + 1] = id end
  end
  xdel(k, gone)
end
if redis.call('XLEN', k.dead) == 0 then
  redis.call('DEL', k.dead, k.dead_index)
end
return #page
