-- ack.lua: complete deliveries of a group, from any holder (the work is done).
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> consumer acking
-- ARGV[2i+1], ARGV[2i+2] -> item i: id, attempt the consumer believes it holds
-- Returns {acked, stale}. An item is stale when the consumer no longer holds that attempt; it
-- is still acked while the group owes it: pending under another holder, or back in ready or
-- delayed after its lease was reclaimed or it was nacked (retries knows those). That last kind
-- is marked ACKED in retries and dropped undelivered by the claim that reaches it, since ready
-- is not searchable by id. An item acked already or dead-lettered is stale and changes nothing.
-- A group that is not registered (deleted) holds nothing: its items are stale, and nothing
-- is written, not even the stale count.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local consumer = ARGV[2]
local ids, want, seen = {}, {}, {}
local stale = 0
for i = 3, #ARGV, 2 do
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
local done, away = {}, {}
for i = 1, #ids do
  local v = recs[i]
  if v then
    if not holds(v, consumer, want[i]) then stale = stale + 1 end
    done[#done + 1] = ids[i]
  else
    stale = stale + 1
    away[#away + 1] = ids[i]
  end
end
unpend(k, done)
unref(k, done)
local waiting = 0
if #away > 0 then
  local tries = read_tries(k, away)
  local mark = {}
  for i, id in ipairs(away) do
    if tries[i] and tries[i] ~= ACKED then
      mark[#mark + 1] = id
      mark[#mark + 1] = ACKED
    end
  end
  if #mark > 0 then call_chunked('HSET', k.retries, mark, 2) end
  waiting = #mark / 2
end
if #done + waiting == 0 and redis.call('HEXISTS', k.registry, ARGV[1]) == 0 then return {0, stale} end
count(k, 'acked', #done + waiting)
count(k, 'stale_acks', stale)
return {#done + waiting, stale}
