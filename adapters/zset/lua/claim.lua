-- claim.lua: claim up to N due members of a group: those whose score (due time) is at most
-- Redis now, earliest due first, then higher priority, then publish order (the member order).
-- A member due later is never taken. Each claimed id gets a lease, a holder and an attempt;
-- the due time it had is kept in due_at, so a release or an immediate retry keeps its place.
--
-- When the batch is full and more is due, a wake-up token is pushed: one publish's token wakes
-- one blocked consumer, and each claim passes it on, so a burst drains across consumers.
--
-- KEYS[1] -> ready (ZSET member -> due, ms)        KEYS[6] -> due_at (HASH id -> due, ms)
-- KEYS[2] -> leases (ZSET id -> deadline, ms)      KEYS[7] -> counters (HASH)
-- KEYS[3] -> holders (HASH id -> consumer)          KEYS[8] -> {p:t}:bodies (HASH)
-- KEYS[4] -> attempts (HASH id -> attempt)          KEYS[9] -> wake (LIST)
-- KEYS[5] -> pending_at (ZSET id -> since, ms)
-- ARGV[1] -> consumer
-- ARGV[2] -> N, the most messages to claim
-- ARGV[3] -> lease in ms
-- Returns {wait, id1, attempt1, body1, id2, ...}. wait is -1, or, when nothing was claimed and
-- something is scheduled, the ms until the earliest member is due, so a blocking claim sleeps
-- until then.

local k = {ready = KEYS[1], leases = KEYS[2], holders = KEYS[3], attempts = KEYS[4],
  pending = KEYS[5], dueat = KEYS[6], counters = KEYS[7], bodies = KEYS[8], wake = KEYS[9]}
local function earliest()
  local first = redis.call('ZRANGE', k.ready, 0, 0, 'WITHSCORES')
  return first[2] and tonumber(first[2])
end

-- An idle claim (nothing scheduled, or nothing due yet) costs one lookup; TIME is read only
-- when something is scheduled.
local first = earliest()
if not first then return {-1} end
local now = now_ms()
local out = {-1}
if first <= now then
  local n = tonumber(ARGV[2])
  local got = take(k, ARGV[1], n, now, now + tonumber(ARGV[3]), out)
  if got > 0 then
    redis.call('HINCRBY', k.counters, 'claimed', got)
    if got == n and #redis.call('ZRANGE', k.ready, '-inf', now, 'BYSCORE', 'LIMIT', 0, 1) > 0 then
      wake(k.wake)
    end
    return out
  end
  first = earliest() -- what was due had no body and is gone
  if not first then return out end
end
out[1] = math.max(0, first - now)
return out
