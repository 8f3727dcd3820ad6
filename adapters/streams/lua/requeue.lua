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
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> N: with no ids after ARGV[4], requeue the N dead letters after the cursor
-- ARGV[4] -> cursor: '-' or '(' followed by the last dead-letter entry id looked at
-- ARGV[5..] -> ids to requeue
-- Returns {dead letters looked at, requeued, cursor}.

local k = {stream = KEYS[1], retry = KEYS[2], dead = KEYS[3], dead_index = KEYS[4],
  dead_refs = KEYS[5], group = ARGV[1], parked = ARGV[2]}
local now = now_ms()
local todo = {} -- {id, dead-letter entry id}
local cursor = ARGV[4]
if #ARGV == 4 then
  for _, e in ipairs(redis.call('XRANGE', k.dead, ARGV[4], '+', 'COUNT', ARGV[3])) do
    todo[#todo + 1] = {e[2][2], e[1]}
    cursor = '(' .. e[1]
  end
else
  for i = 5, #ARGV do
    local dl = redis.call('HGET', k.dead_index, ARGV[i])
    if dl then todo[#todo + 1] = {ARGV[i], dl} end
  end
end

local requeued = 0
for _, t in ipairs(todo) do
  local id, dl = t[1], t[2]
  if redis.call('XRANGE', k.stream, id, id)[1] then
    redis.call('XCLAIM', k.stream, k.group, k.parked, 0, id, 'RETRYCOUNT', 0, 'FORCE', 'JUSTID')
    redis.call('ZADD', k.retry, now, pad(id))
    redis.call('XDEL', k.dead, dl)
    redis.call('HDEL', k.dead_index, id)
    unref(k, id)
    requeued = requeued + 1
  end
end
if redis.call('XLEN', k.dead) == 0 then redis.call('DEL', k.dead) end
return {#todo, requeued, cursor}
