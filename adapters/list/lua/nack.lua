-- nack.lua: return held deliveries to ready (now or after a delay), release them, or
-- dead-letter them. Fenced: an item counts only if the consumer holds that attempt.
--
-- An immediate retry and a release go to the consume end of ready (RPUSH), so the message is
-- the next one claimed and FIFO order survives a retry; a delayed retry waits in delayed.
--
-- KEYS[1] -> ready (LIST)        KEYS[4] -> holders (HASH)      KEYS[7]  -> dead (ZSET id -> dead at)
-- KEYS[2] -> processing (LIST)   KEYS[5] -> attempts (HASH)     KEYS[8]  -> dead_reasons (HASH)
-- KEYS[3] -> delayed (ZSET)      KEYS[6] -> leases (ZSET)       KEYS[9]  -> counters (HASH)
-- ARGV[1] -> consumer nacking
-- ARGV[2] -> max deliveries (0: no limit)
-- ARGV[3+5i .. 7+5i] -> item i: id, attempt, delay ms, mode (0 retry, 1 dead-letter, 2 release), reason
-- Returns {requeued, dead_lettered, stale}.

local k = {ready = KEYS[1], processing = KEYS[2], delayed = KEYS[3], holders = KEYS[4],
  attempts = KEYS[5], leases = KEYS[6], dead = KEYS[7], reasons = KEYS[8], counters = KEYS[9]}
local consumer, max = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local requeued, buried, stale, nacked = 0, 0, 0, 0
for i = 3, #ARGV, 5 do
  local id, attempt, delay, mode, reason = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4]
  if not holds(k, id, consumer, attempt) then
    stale = stale + 1
  else
    redis.call('LREM', k.processing, 1, id)
    unlease(k, id)
    local n = tonumber(attempt)
    if mode == '2' then
      if redis.call('HINCRBY', k.attempts, id, -1) <= 0 then redis.call('HDEL', k.attempts, id) end
      make_ready(k, id, now)
      requeued = requeued + 1
    else
      nacked = nacked + 1
      if mode == '1' or (max > 0 and n >= max) then
        if reason == '' then reason = 'nacked after ' .. n .. ' attempts' end
        bury(k, id, reason, now)
        buried = buried + 1
      elseif delay > 0 then
        redis.call('ZADD', k.delayed, now + delay, id)
        requeued = requeued + 1
      else
        make_ready(k, id, now)
        requeued = requeued + 1
      end
    end
  end
end
if nacked > 0 then redis.call('HINCRBY', k.counters, 'nacked', nacked) end
if buried > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', buried) end
if stale > 0 then redis.call('HINCRBY', k.counters, 'stale_nacks', stale) end
return {requeued, buried, stale}
