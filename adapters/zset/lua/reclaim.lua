-- reclaim.lua: return expired leases of a group to ready, due now, or dead-letter those whose
-- attempts reached the limit. Nothing else needs recovering here: claim.lua takes a message
-- and leases it in one script, so nothing is ever pending without a lease, and delayed
-- messages wait in the ready ZSET itself, so nothing needs promoting.
--
-- KEYS[1] -> ready (ZSET)        KEYS[5] -> pending_at (ZSET)      KEYS[9]  -> counters (HASH)
-- KEYS[2] -> leases (ZSET)       KEYS[6] -> due_at (HASH)          KEYS[10] -> {p:t}:priorities (HASH)
-- KEYS[3] -> holders (HASH)      KEYS[7] -> dead (ZSET id -> at)   KEYS[11] -> wake (LIST)
-- KEYS[4] -> attempts (HASH)     KEYS[8] -> dead_reasons (HASH)
-- ARGV[1] -> max deliveries (0: no limit)
-- ARGV[2] -> N, the most expired leases handled
-- Returns {reclaimed, dead_lettered}.

local k = {ready = KEYS[1], leases = KEYS[2], holders = KEYS[3], attempts = KEYS[4],
  pending = KEYS[5], dueat = KEYS[6], dead = KEYS[7], reasons = KEYS[8], counters = KEYS[9],
  prio = KEYS[10], wake = KEYS[11]}
local max = tonumber(ARGV[1])
local now = now_ms()
local reclaimed, buried = 0, 0

local expired = redis.call('ZRANGE', k.leases, '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(expired) do
  unlease(k, id)
  local attempt = tonumber(redis.call('HGET', k.attempts, id) or '0')
  if max > 0 and attempt >= max then
    bury(k, id, 'lease expired after ' .. attempt .. ' attempts', now)
    buried = buried + 1
  else
    put_back(k, id, now)
    reclaimed = reclaimed + 1
  end
end

if reclaimed > 0 then
  redis.call('HINCRBY', k.counters, 'reclaimed', reclaimed)
  wake(k.wake)
end
if buried > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', buried) end
return {reclaimed, buried}
