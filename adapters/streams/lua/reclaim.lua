-- reclaim.lua: return a group's expired leases to the retry ZSET (or the dead letters), tidy
-- pending_at, remove consumers idle long enough with nothing pending, and tell when the next
-- lease expires.
--
-- A lease is the PEL idle time of an entry (reset by claims and heartbeats) measured against
-- its holder's lease, which Claim and Extend record per consumer (leases HASH); a consumer
-- without a record (another program's) gets the orphan lease. A consumer holding at most
-- ARGV[8] entries has them all read (XPENDING ... - + n consumer), which tells both its
-- expired entries and when the next one expires (its lease less the largest idle time left);
-- a larger one has its expired entries found with XPENDING ... IDLE <lease>, and its next
-- expiry taken from its first ARGV[8] entries only. XCLAIM ... JUSTID parks the expired ones
-- without counting an attempt; those whose count reached max deliveries are dead-lettered.
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
-- KEYS[10] -> dead_order (ZSET) the group's dead letters in order, for paging
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> max deliveries (0: no limit)
-- ARGV[4] -> orphan lease in ms: the lease of consumers without a record
-- ARGV[5] -> N, the most expired deliveries handled
-- ARGV[6] -> topic (recorded with dead letters)
-- ARGV[7] -> consumer idle timeout in ms (0: keep idle consumers)
-- ARGV[8] -> W: the most entries of one consumer read to find its next expiry
-- Per call: one HMGET of leases, one XPENDING per consumer holding entries (two for one
-- holding more than W), then one XCLAIM, one ZADD of schedules and one ZREM of pending_at for
-- all it found expired.
-- Returns {reclaimed, dead_lettered, removed consumers, ms until the earliest lease left
-- expires (-1: none pending), 1 if it stopped at N with more possibly expired, else 0}.

local k = {stream = KEYS[1], retry = KEYS[2], counters = KEYS[3], pending = KEYS[4],
  leases = KEYS[5], dead = KEYS[6], dead_index = KEYS[7], dead_refs = KEYS[8], delayed = KEYS[9],
  dead_order = KEYS[10], group = ARGV[1], parked = ARGV[2], topic = ARGV[6]}
local max, orphan, left, idle_timeout = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[7])
local now = now_ms()
prune_delayed(k, now)

local window = tonumber(ARGV[8])
local summary = redis.pcall('XPENDING', k.stream, k.group)
if type(summary) ~= 'table' or summary.err then return {0, 0, 0, -1, 0} end

local removed, next_expiry, more = 0, -1, 0
local holders, names = {}, {}
for _, c in ipairs(summary[4] or {}) do
  if c[1] ~= k.parked then
    holders[#holders + 1] = {c[1], tonumber(c[2])}
    names[#names + 1] = c[1]
  end
end
local leases = call_ids('HMGET', k.leases, {}, names)

local function expires_in(ms)
  if next_expiry < 0 or ms < next_expiry then next_expiry = ms end
end

local handled, park_ids, park_at, dead = {}, {}, {}, {}
local function expire(e)
  local id, count = e[1], tonumber(e[4])
  left = left - 1
  handled[#handled + 1] = id
  if max > 0 and count >= max then
    dead[#dead + 1] = {id, count, 'lease expired after ' .. count .. ' attempts'}
  else
    park_ids[#park_ids + 1] = id
    park_at[#park_at + 1] = published_at(id, now)
  end
end

for i, h in ipairs(holders) do
  local consumer, n = h[1], h[2]
  local lease = tonumber(leases[i] or orphan)
  if left <= 0 then
    more = 1
    break
  end
  if n <= window then
    for _, e in ipairs(redis.call('XPENDING', k.stream, k.group, '-', '+', n, consumer)) do
      local idle = tonumber(e[3])
      if idle < lease then
        expires_in(lease - idle)
      elseif left > 0 then
        expire(e)
      else
        more = 1
      end
    end
  else
    local expired = redis.call('XPENDING', k.stream, k.group, 'IDLE', lease, '-', '+', left, consumer)
    for _, e in ipairs(expired) do expire(e) end
    if left <= 0 then more = 1 end
    for _, e in ipairs(redis.call('XPENDING', k.stream, k.group, '-', '+', window, consumer)) do
      local idle = tonumber(e[3])
      if idle < lease then expires_in(lease - idle) end
    end
  end
end
local reclaimed = park(k, park_ids, park_at)
bury(k, dead, now)

-- pending_at can outlive a delivery that another program acked or claimed: its oldest
-- members are checked, so a stale one cannot stay at the head for long.
local oldest = redis.call('ZRANGE', k.pending, 0, 9)
local pel = pel_of(k, oldest)
for _, id in ipairs(oldest) do
  local p = pel[id]
  if not p or p[1] == k.parked then handled[#handled + 1] = id end
end
call_ids('ZREM', k.pending, {}, handled)

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
if #dead > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', #dead) end
return {reclaimed, #dead, removed, next_expiry, more}
