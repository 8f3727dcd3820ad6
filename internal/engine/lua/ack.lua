-- ack.lua: remove deliveries from a group's pending set, from any holder (the work is done).
--
-- KEYS -> the topic's 5 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> consumer acking
-- ARGV[2i], ARGV[2i+1] -> item i: id, attempt the consumer believes it holds
-- Returns {acked, stale}. An item is stale when it is not pending (already acked or back in
-- ready) or when the consumer no longer holds that attempt; a pending stale item is still acked.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local consumer = ARGV[1]
local ids, want, seen = {}, {}, {}
local stale = 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  if seen[id] then
    stale = stale + 1
  else
    seen[id] = true
    ids[#ids + 1] = id
    want[#ids] = ARGV[i + 1]
  end
end
local recs = redis.call('HMGET', k.holders, unpack(ids))
local done = {}
for i = 1, #ids do
  local v = recs[i]
  if v then
    if not holds(v, consumer, want[i]) then stale = stale + 1 end
    done[#done + 1] = ids[i]
  else
    stale = stale + 1
  end
end
unpend(k, done)
unref(k, done)
count(k, 'acked', #done)
count(k, 'stale_acks', stale)
return {#done, stale}
