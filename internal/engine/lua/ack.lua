-- ack.lua: remove deliveries from a group's pending set, from any holder (the work is done).
--
-- KEYS -> the topic's 5 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> consumer acking
-- ARGV[2i], ARGV[2i+1] -> item i: id, attempt the consumer believes it holds
-- Returns {acked, stale}. An item is stale when it is not pending (already acked or back in
-- ready) or when the consumer no longer holds that attempt; a pending stale item is still acked.

local k = keys_at(TOPIC_KEYS + 1)
local consumer = ARGV[1]
local ids, want, seen = {}, {}, {}
local stale = 0
for i = 2, #ARGV, 2 do
  if seen[ARGV[i]] then
    stale = stale + 1
  else
    seen[ARGV[i]] = true
    ids[#ids + 1] = ARGV[i]
    want[#ids] = tonumber(ARGV[i + 1])
  end
end
local recs = read_records(k, ids)
local done = {}
for i, id in ipairs(ids) do
  local r = recs[i]
  if r then
    if r.consumer ~= consumer or r.attempt ~= want[i] then stale = stale + 1 end
    done[#done + 1] = id
  else
    stale = stale + 1
  end
end
unpend(k, done)
unref(k, done)
count(k, 'acked', #done)
count(k, 'stale_acks', stale)
return {#done, stale}
