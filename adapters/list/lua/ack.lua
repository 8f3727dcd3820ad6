-- ack.lua: remove deliveries from a group's pending set, from any holder (the work is done).
--
-- KEYS[1] -> processing (LIST)   KEYS[4] -> attempts (HASH)     KEYS[7] -> {p:t}:refs (HASH)
-- KEYS[2] -> leases (ZSET)       KEYS[5] -> counters (HASH)
-- KEYS[3] -> holders (HASH)      KEYS[6] -> {p:t}:bodies (HASH)
-- ARGV[1] -> consumer acking
-- ARGV[2i], ARGV[2i+1] -> item i: id, attempt the consumer believes it holds
-- Returns {acked, stale}. An item is stale when it is not pending (already acked or back in
-- ready) or when the consumer no longer holds that attempt; a pending stale item is still acked.

local k = {processing = KEYS[1], leases = KEYS[2], holders = KEYS[3], attempts = KEYS[4],
  counters = KEYS[5], bodies = KEYS[6], refs = KEYS[7]}
local consumer = ARGV[1]
local acked, stale = 0, 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local held = holds(k, id, consumer, ARGV[i + 1])
  if redis.call('LREM', k.processing, 1, id) > 0 then
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
