-- reclaim.lua: return expired leases of a group to ready (or dead-letter them), promote due
-- delayed messages, and lease orphans: ids in processing without a lease, left by a consumer
-- that died between BLMOVE and register.lua. An orphan lease has no holder; it expires like any
-- other lease, or register.lua takes it over.
--
-- Orphans are looked for among the N oldest entries of processing (its right end): an orphan
-- drifts there as older entries are acked or reclaimed, so every orphan is found eventually.
--
-- KEYS[1] -> ready (LIST)        KEYS[4] -> holders (HASH)      KEYS[7]  -> dead (ZSET)
-- KEYS[2] -> processing (LIST)   KEYS[5] -> attempts (HASH)     KEYS[8]  -> dead_reasons (HASH)
-- KEYS[3] -> delayed (ZSET)      KEYS[6] -> leases (ZSET)       KEYS[9]  -> counters (HASH)
-- ARGV[1] -> max deliveries (0: no limit)
-- ARGV[2] -> orphan lease in ms
-- ARGV[3] -> N, the most ids handled by each of the three steps
-- Returns {reclaimed, dead_lettered, orphans, promoted}.

local k = {ready = KEYS[1], processing = KEYS[2], delayed = KEYS[3], holders = KEYS[4],
  attempts = KEYS[5], leases = KEYS[6], dead = KEYS[7], reasons = KEYS[8], counters = KEYS[9]}
local max, orphanLease, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local reclaimed, buried, orphans = 0, 0, 0

-- Latest deadline first, so the earliest expired ends up at the consume end.
local expired = redis.call('ZRANGEBYSCORE', k.leases, '-inf', '(' .. now, 'LIMIT', 0, n)
for i = #expired, 1, -1 do
  local id = expired[i]
  unlease(k, id)
  if redis.call('LREM', k.processing, 1, id) > 0 then
    local attempt = tonumber(redis.call('HGET', k.attempts, id) or '0')
    if max > 0 and attempt >= max then
      bury(k, id, 'lease expired after ' .. attempt .. ' attempts', now)
      buried = buried + 1
    else
      make_ready(k, id, now)
      reclaimed = reclaimed + 1
    end
  end
end

local promoted = promote(k, now, n)

-- An orphan is still the "id@ms" entry BLMOVE moved: it becomes the bare id in place.
local oldest = redis.call('LRANGE', k.processing, -n, -1)
for j, e in ipairs(oldest) do
  local id = split(e)
  if id ~= e then redis.call('LSET', k.processing, j - 1 - #oldest, id) end
  if not redis.call('ZSCORE', k.leases, id) then
    redis.call('ZADD', k.leases, now + orphanLease, id)
    redis.call('HSET', k.holders, id, ':' .. string.format('%d', now)) -- held by nobody
    orphans = orphans + 1
  end
end

if reclaimed > 0 then redis.call('HINCRBY', k.counters, 'reclaimed', reclaimed) end
if buried > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', buried) end
return {reclaimed, buried, orphans, promoted}
