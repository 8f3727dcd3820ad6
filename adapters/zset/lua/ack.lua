-- ack.lua: remove deliveries from a group's pending set, from any holder (the work is done).
--
-- KEYS[1] -> leases (ZSET)       KEYS[4] -> pending_at (ZSET)   KEYS[7] -> {p:t}:bodies (HASH)
-- KEYS[2] -> holders (HASH)      KEYS[5] -> due_at (HASH)       KEYS[8] -> {p:t}:refs (HASH)
-- KEYS[3] -> attempts (HASH)     KEYS[6] -> counters (HASH)     KEYS[9] -> {p:t}:priorities (HASH)
-- ARGV[1] -> consumer acking
-- ARGV[2i], ARGV[2i+1] -> item i: id, attempt the consumer believes it holds
-- Returns {acked, stale}. An item is stale when it is not pending (already acked or back in
-- ready) or when the consumer no longer holds that attempt; a pending stale item is still acked.

local k = {leases = KEYS[1], holders = KEYS[2], attempts = KEYS[3], pending = KEYS[4],
  dueat = KEYS[5], counters = KEYS[6], bodies = KEYS[7], refs = KEYS[8], prio = KEYS[9]}
local consumer = ARGV[1]
local acked, stale = 0, 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local held = holds(k, id, consumer, ARGV[i + 1])
  if redis.call('ZSCORE', k.leases, id) then
    if not held then stale = stale + 1 end
    unlease(k, id)
    redis.call('HDEL', k.attempts, id)
    unref(k, id)
    acked = acked + 1
  else
    stale = stale + 1
  end
end
if acked > 0 then redis.call('HINCRBY', k.counters, 'acked', acked) end
if stale > 0 then redis.call('HINCRBY', k.counters, 'stale_acks', stale) end
return {acked, stale}
