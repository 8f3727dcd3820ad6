-- claim.lua: promote due delayed messages of a group, then claim up to N ready ones.
--
-- KEYS[1] -> ready (LIST of "id@ms")   KEYS[5] -> holders (HASH id -> "consumer:pending since")
-- KEYS[2] -> processing (LIST of ids)   KEYS[6] -> attempts (HASH id -> attempt)
-- KEYS[3] -> delayed (ZSET)             KEYS[7] -> counters (HASH)
-- KEYS[4] -> leases (ZSET id -> deadline, ms)
-- KEYS[8] -> {p:t}:bodies (HASH id -> envelope bytes)
-- ARGV[1] -> consumer
-- ARGV[2] -> N, the most messages to claim
-- ARGV[3] -> lease in ms
-- ARGV[4] -> the most delayed messages to promote
-- Returns {wait, id1, attempt1, body1, id2, ...}. wait is -1, or, when nothing was claimed,
-- the ms until the earliest delayed message is due (0 if one is due now), so a blocking claim
-- wakes up in time to promote it.

local k = {ready = KEYS[1], processing = KEYS[2], delayed = KEYS[3], leases = KEYS[4],
  holders = KEYS[5], attempts = KEYS[6], counters = KEYS[7], bodies = KEYS[8]}
local now = now_ms()
promote(k, now, tonumber(ARGV[4]))
local out = {-1}
local got = take(k, ARGV[1], tonumber(ARGV[2]), now, now + tonumber(ARGV[3]), out)
if got > 0 then
  redis.call('HINCRBY', k.counters, 'claimed', got)
  return out
end
local first = redis.call('ZRANGE', k.delayed, 0, 0, 'WITHSCORES')
if first[2] then out[1] = math.max(0, tonumber(first[2]) - now) end
return out
