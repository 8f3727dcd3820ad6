-- reclaim.lua: return a group's expired leases to the retry ZSET (or the dead letters), tidy
-- pending_at, and remove consumers idle long enough with nothing pending.
--
-- A lease is the PEL idle time of an entry (reset by claims and heartbeats) measured against
-- its holder's lease, which Claim and Extend record per consumer (leases HASH); a consumer
-- without a record (another program's) gets the orphan lease. For each consumer,
-- XPENDING ... IDLE <lease> finds its expired entries; XCLAIM ... <lease> JUSTID parks them
-- without counting an attempt. Those whose count reached max deliveries are dead-lettered.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET) the group's
-- KEYS[3] -> counters (HASH) the group's
-- KEYS[4] -> pending_at (ZSET) the group's
-- KEYS[5] -> leases (HASH consumer -> lease ms) the group's
-- KEYS[6] -> dead (STREAM) the group's dead letters
-- KEYS[7] -> dead_index (HASH) the group's
-- KEYS[8] -> dead_refs (HASH) the topic's
-- KEYS[9] -> delayed (ZSET) the topic's
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> max deliveries (0: no limit)
-- ARGV[4] -> orphan lease in ms: the lease of consumers without a record
-- ARGV[5] -> N, the most expired deliveries handled
-- ARGV[6] -> topic (recorded with dead letters)
-- ARGV[7] -> consumer idle timeout in ms (0: keep idle consumers)
-- Returns {reclaimed, dead_lettered, removed consumers}.

local k = {stream = KEYS[1], retry = KEYS[2], counters = KEYS[3], pending = KEYS[4],
  leases = KEYS[5], dead = KEYS[6], dead_index = KEYS[7], dead_refs = KEYS[8], delayed = KEYS[9],
  group = ARGV[1], parked = ARGV[2], topic = ARGV[6]}
local max, orphan, left, idle_timeout = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[7])
local now = now_ms()
prune_delayed(k, now)

local summary = redis.pcall('XPENDING', k.stream, k.group)
if type(summary) ~= 'table' or summary.err then return {0, 0, 0} end

local reclaimed, buried, removed = 0, 0, 0
for _, c in ipairs(summary[4] or {}) do
  local consumer = c[1]
  if consumer ~= k.parked and left > 0 then
    local lease = redis.call('HGET', k.leases, consumer) or orphan
    local expired = redis.call('XPENDING', k.stream, k.group, 'IDLE', lease, '-', '+', left, consumer)
    for _, e in ipairs(expired) do
      local id, count = e[1], tonumber(e[4])
      left = left - 1
      if max > 0 and count >= max then
        bury(k, id, count, 'lease expired after ' .. count .. ' attempts', now)
        buried = buried + 1
      elseif park(k, id, published_at(id, now)) then
        reclaimed = reclaimed + 1
      end
    end
  end
end

-- pending_at can outlive a delivery that another program acked or claimed: its oldest
-- members are checked, so a stale one cannot stay at the head for long.
for _, id in ipairs(redis.call('ZRANGE', k.pending, 0, 9)) do
  local owner = pending(k, id)
  if not owner or owner == k.parked then redis.call('ZREM', k.pending, id) end
end

if idle_timeout > 0 then
  for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', k.stream, k.group)) do
    local t = {}
    for i = 1, #c, 2 do t[c[i]] = c[i + 1] end
    if t['name'] ~= k.parked and tonumber(t['pending']) == 0 and tonumber(t['idle']) >= idle_timeout then
      redis.call('XGROUP', 'DELCONSUMER', k.stream, k.group, t['name'])
      redis.call('HDEL', k.leases, t['name'])
      removed = removed + 1
    end
  end
end

if reclaimed > 0 then redis.call('HINCRBY', k.counters, 'reclaimed', reclaimed) end
if buried > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', buried) end
return {reclaimed, buried, removed}
