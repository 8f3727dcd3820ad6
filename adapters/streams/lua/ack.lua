-- ack.lua: acknowledge deliveries of a group, from any holder (the work is done), and with
-- delete-on-ack retention delete the entries no group needs any more.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET) the group's
-- KEYS[3] -> counters (HASH) the group's
-- KEYS[4] -> pending_at (ZSET) the group's
-- KEYS[5] -> dead_refs (HASH id -> groups keeping it as a dead letter) the topic's
-- ARGV[1] -> group
-- ARGV[2] -> consumer acking
-- ARGV[3] -> '1': delete entries once every group has acked them
-- ARGV[4+2i], ARGV[5+2i] -> item i: id, attempt the consumer believes it holds
-- Returns {acked, stale}. An item is stale when it is not pending (acked already, or
-- dead-lettered) or when the consumer no longer holds that attempt (another consumer or the
-- parking consumer has it); a pending stale item is still acked.

local k = {stream = KEYS[1], retry = KEYS[2], counters = KEYS[3], pending = KEYS[4],
  dead_refs = KEYS[5], group = ARGV[1]}
local consumer = ARGV[2]
local acked, stale = 0, 0
local done = {}
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  local owner, count = pending(k, id)
  if owner then
    if owner ~= consumer or count ~= tonumber(ARGV[i + 1]) then stale = stale + 1 end
    redis.call('XACK', k.stream, k.group, id)
    redis.call('ZREM', k.retry, pad(id))
    redis.call('ZREM', k.pending, id)
    acked = acked + 1
    done[#done + 1] = id
  else
    stale = stale + 1
  end
end
if ARGV[3] == '1' and #done > 0 then
  local groups = groups_of(k)
  local gone = {}
  for _, id in ipairs(done) do
    if unneeded(k, id, groups) then gone[#gone + 1] = id end
  end
  xdel(k, gone)
end
if acked > 0 then redis.call('HINCRBY', k.counters, 'acked', acked) end
if stale > 0 then redis.call('HINCRBY', k.counters, 'stale_acks', stale) end
return {acked, stale}
