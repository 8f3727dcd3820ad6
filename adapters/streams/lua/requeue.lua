-- requeue.lua: give dead letters back to their group with their attempts reset, keeping
-- their delivery IDs: the ids given, or the next N after a cursor.
--
-- The entry goes back to the group's PEL under the parking consumer with delivery count 0
-- (XCLAIM ... RETRYCOUNT 0 FORCE JUSTID: FORCE, since the dead letter was acked) and is due
-- now. An entry no longer in the stream (trimmed) cannot go back: its dead letter stays.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET) the group's
-- KEYS[3] -> dead (STREAM) the group's dead letters
-- KEYS[4] -> dead_index (HASH id -> dead-letter entry id) the group's
-- KEYS[5] -> dead_refs (HASH) the topic's
-- KEYS[6] -> dead_order (ZSET) the group's dead letters in order, for paging
-- KEYS[7] -> wake (STREAM) the group's wake-up stream
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> N: with no ids after ARGV[4], requeue the N dead letters after the cursor
-- ARGV[4] -> cursor: '-' or '(' followed by the last dead-letter entry id looked at
-- ARGV[5..] -> ids to requeue
-- Per call: one XRANGE of the dead letters or one HMGET of dead_index, one XCLAIM, and one
-- write to each of retry, dead, dead_index and dead_order; one XADD wakes blocked claims.
-- Returns {dead letters looked at, requeued, cursor}.

local k = {stream = KEYS[1], retry = KEYS[2], dead = KEYS[3], dead_index = KEYS[4],
  dead_refs = KEYS[5], dead_order = KEYS[6], wake = KEYS[7], group = ARGV[1], parked = ARGV[2]}
drain_ok(k.dead_index)
local now = now_ms()
local todo = {} -- id -> dead-letter entry id
local ids = {}
local cursor = ARGV[4]
if #ARGV == 4 then
  for _, e in ipairs(redis.call('XRANGE', k.dead, ARGV[4], '+', 'COUNT', ARGV[3])) do
    if not todo[e[2][2]] then ids[#ids + 1] = e[2][2] end
    todo[e[2][2]] = e[1]
    cursor = '(' .. e[1]
  end
else
  local asked = {}
  for i = 5, #ARGV do asked[#asked + 1] = ARGV[i] end
  for i, dl in ipairs(call_ids('HMGET', k.dead_index, {}, asked)) do
    if dl and not todo[asked[i]] then
      ids[#ids + 1] = asked[i]
      todo[asked[i]] = dl
    end
  end
end

local back = call_ids('XCLAIM', k.stream, {k.group, k.parked, 0}, ids, {'RETRYCOUNT', 0, 'FORCE', 'JUSTID'})
local z, dls = {}, {}
for _, id in ipairs(back) do
  z[#z + 1] = now
  z[#z + 1] = pad(id)
  dls[#dls + 1] = {id, todo[id]}
end
if #z > 0 then
  call_chunked('ZADD', k.retry, z, 2)
  wake(k)
  keep_ttl(k, {k.retry, k.wake})
end
forget(k, dls)
if redis.call('XLEN', k.dead) == 0 then redis.call('DEL', k.dead, k.dead_order) end
return {#ids, #dls, cursor}
