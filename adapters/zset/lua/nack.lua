-- nack.lua: return held deliveries to ready (now or after a delay), release them, or
-- dead-letter them. Fenced: an item counts only if the consumer holds that attempt.
--
-- A delayed retry is re-scored to now + delay. An immediate retry and a release are due at once
-- with the due time they had when claimed (never later than now): the message keeps its place
-- in line, ahead of what became due after it and behind what was due before it, so one
-- consumer still sees publish order, and nothing that waited longer is overtaken.
--
-- KEYS[1] -> ready (ZSET)        KEYS[5] -> pending_at (ZSET)      KEYS[9]  -> counters (HASH)
-- KEYS[2] -> leases (ZSET)       KEYS[6] -> due_at (HASH)          KEYS[10] -> {p:t}:priorities (HASH)
-- KEYS[3] -> holders (HASH)      KEYS[7] -> dead (ZSET id -> at)   KEYS[11] -> wake (LIST)
-- KEYS[4] -> attempts (HASH)     KEYS[8] -> dead_reasons (HASH)
-- ARGV[1] -> consumer nacking
-- ARGV[2] -> max deliveries (0: no limit)
-- ARGV[3+5i .. 7+5i] -> item i: id, attempt, delay ms, mode (0 retry, 1 dead-letter, 2 release), reason
-- Returns {requeued, dead_lettered, stale}.

local k = {ready = KEYS[1], leases = KEYS[2], holders = KEYS[3], attempts = KEYS[4],
  pending = KEYS[5], dueat = KEYS[6], dead = KEYS[7], reasons = KEYS[8], counters = KEYS[9],
  prio = KEYS[10], wake = KEYS[11]}
local consumer, max = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local requeued, buried, stale, nacked = 0, 0, 0, 0
for i = 3, #ARGV, 5 do
  local id, attempt, delay, mode, reason = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4]
  if not holds(k, id, consumer, attempt) then
    stale = stale + 1
  else
    local place = math.min(now, tonumber(redis.call('HGET', k.dueat, id) or now) or now)
    unlease(k, id)
    local n = tonumber(attempt)
    if mode == '2' then
      if redis.call('HINCRBY', k.attempts, id, -1) <= 0 then redis.call('HDEL', k.attempts, id) end
      put_back(k, id, place)
      requeued = requeued + 1
    else
      nacked = nacked + 1
      if mode == '1' or (max > 0 and n >= max) then
        if reason == '' then reason = 'nacked after ' .. n .. ' attempts' end
        bury(k, id, reason, now)
        buried = buried + 1
      elseif delay > 0 then
        put_back(k, id, now + delay)
        requeued = requeued + 1
      else
        put_back(k, id, place)
        requeued = requeued + 1
      end
    end
  end
end
if requeued > 0 then wake(k.wake) end
if nacked > 0 then redis.call('HINCRBY', k.counters, 'nacked', nacked) end
if buried > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', buried) end
if stale > 0 then redis.call('HINCRBY', k.counters, 'stale_nacks', stale) end
return {requeued, buried, stale}
