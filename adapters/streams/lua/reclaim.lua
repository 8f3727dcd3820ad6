-- reclaim.lua: return a group's expired leases to the retry ZSET (or the dead letters), tidy
-- pending_at, remove consumers idle long enough with nothing pending, and tell when the next
-- lease expires.
--
-- A lease is the PEL idle time of an entry (reset by claims and heartbeats) measured against
-- its holder's lease, which Claim and Extend record per consumer (leases HASH); a consumer
-- without a record (another program's) gets the orphan lease. A consumer holding at most
-- W = ARGV[8] entries has them all read (XPENDING ... - + n consumer). A larger one is walked:
-- each call reads its next entries after where the last call stopped (reclaim_from HASH), up
-- to what is left of a budget of max(W, N) entries per call shared by the larger consumers
-- (which of them reads first changes from call to call, by the clock), and starts over at its
-- lowest ID once it has read them all; every entry is looked at within a walk, whatever the
-- consumer holds, and no call reads more than the budget. XPENDING ... IDLE would find only
-- the expired ones, but reads the consumer's whole PEL to do so. XCLAIM ... JUSTID parks the
-- expired ones without counting an attempt; those whose count reached max deliveries are
-- dead-lettered.
--
-- The next expiry is the earliest among the entries read: every entry of a small consumer,
-- the part of a large one's walk this call read. A call that found expired entries in a walk
-- that it did not read whole (a dead consumer's: likely more in the rest), or stopped at N,
-- reports more, so that the caller runs again at once and the walk goes on until it meets no
-- expired entry.
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
-- KEYS[11] -> wake (STREAM) the group's wake-up stream
-- KEYS[12] -> reclaim_from (HASH consumer -> PEL entry ID) where the walk of each large
--             consumer goes on
-- KEYS[13] -> ephemeral (ZSET group -> expiry ms) the topic's ephemeral groups
-- KEYS[14] -> deleting (SET) the topic's groups whose delete is unfinished
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> max deliveries (0: no limit)
-- ARGV[4] -> orphan lease in ms: the lease of consumers without a record
-- ARGV[5] -> N, the most expired deliveries handled
-- ARGV[6] -> topic (recorded with dead letters)
-- ARGV[7] -> consumer idle timeout in ms (0: keep idle consumers)
-- ARGV[8] -> W: a consumer holding at most W entries has them all read
-- Per call: one HMGET of leases, one XPENDING per consumer holding entries, one HMGET and at
-- most two writes of reclaim_from when any holds more than W; then one XCLAIM, one ZADD of
-- schedules, one ZREM of pending_at and one XADD to the wake-up stream for all it found
-- expired, or else one XRANGE of the wake-up stream (deleted a minute after its last entry).
-- Returns {reclaimed, dead_lettered, removed consumers, ms until the earliest lease read
-- expires (-1: none), 1 if more may have expired already, else 0, an ephemeral group of the
-- topic that expired, a group of the topic whose delete is unfinished} ('': none; the caller
-- deletes them). On a group that is not registered it writes nothing.

local k = {stream = KEYS[1], retry = KEYS[2], counters = KEYS[3], pending = KEYS[4],
  leases = KEYS[5], dead = KEYS[6], dead_index = KEYS[7], dead_refs = KEYS[8], delayed = KEYS[9],
  dead_order = KEYS[10], wake = KEYS[11], reclaim_from = KEYS[12], ephemeral = KEYS[13],
  deleting = KEYS[14], group = ARGV[1], parked = ARGV[2], topic = ARGV[6]}
drain_ok(k.counters)
local max, orphan, left, idle_timeout = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[7])
local window = tonumber(ARGV[8])
local wake_keep_ms = 60000
local now = now_ms()
prune_delayed(k, now)
local expired, unfinished = '', ''
if redis.call('EXISTS', k.ephemeral, k.deleting) > 0 then
  expired = redis.call('ZRANGEBYSCORE', k.ephemeral, '-inf', '(' .. now, 'LIMIT', 0, 1)[1] or ''
  unfinished = redis.call('SRANDMEMBER', k.deleting) or ''
end

local summary = redis.pcall('XPENDING', k.stream, k.group)
if type(summary) ~= 'table' or summary.err then return {0, 0, 0, -1, 0, expired, unfinished} end

local removed, next_expiry, more = 0, -1, 0
local holders, names = {}, {}
for _, c in ipairs(summary[4] or {}) do
  if c[1] ~= k.parked then
    holders[#holders + 1] = {name = c[1], n = tonumber(c[2])}
    names[#names + 1] = c[1]
  end
end
local leases = call_ids('HMGET', k.leases, {}, names)
for i, h in ipairs(holders) do h.lease = tonumber(leases[i] or orphan) end

local handled, park_ids, park_at, dead = {}, {}, {}, {}
local walked = false

-- look handles one PEL entry of holder h: expired, it is parked or dead-lettered while N
-- allows; else it tells when it expires. It returns false when N is used up before it.
local function look(h, e)
  local idle = tonumber(e[3])
  if idle < h.lease then
    local ms = h.lease - idle
    if next_expiry < 0 or ms < next_expiry then next_expiry = ms end
    return true
  end
  if left <= 0 then
    more = 1
    return false
  end
  local id, count = e[1], tonumber(e[4])
  left = left - 1
  handled[#handled + 1] = id
  if max > 0 and count >= max then
    dead[#dead + 1] = {id, count, 'lease expired after ' .. count .. ' attempts'}
  else
    park_ids[#park_ids + 1] = id
    park_at[#park_at + 1] = published_at(id, now)
  end
  return true
end

-- Small holders: every entry.
local large = {}
for _, h in ipairs(holders) do
  if h.n > window then
    large[#large + 1] = h
  else
    for _, e in ipairs(redis.call('XPENDING', k.stream, k.group, '-', '+', h.n, h.name)) do
      if not look(h, e) then break end
    end
  end
end

-- Large holders: the next part of each one's walk, while the budget lasts.
if #large > 0 then
  local lnames = {}
  for i, h in ipairs(large) do lnames[i] = h.name end
  local from = call_ids('HMGET', k.reclaim_from, {}, lnames)
  local budget = math.max(window, tonumber(ARGV[5]))
  local set, restart = {}, {}
  local first = now % #large
  for j = 0, #large - 1 do
    local i = (first + j) % #large + 1
    local h = large[i]
    if budget <= 0 then break end
    local start = from[i] and ('(' .. from[i]) or '-'
    local asked = budget
    local r = redis.call('XPENDING', k.stream, k.group, start, '+', asked, h.name)
    budget = budget - #r
    local seen, found, stopped = nil, #handled, false
    for _, e in ipairs(r) do
      if not look(h, e) then
        stopped = true
        break
      end
      seen = e[1]
    end
    local ended = not stopped and #r < asked
    -- Expired entries found, and some not read in this call: likely more expired.
    if #handled > found and not (ended and not from[i]) then more = 1 end
    if ended then
      -- It read to the end of the consumer's PEL: the next call starts over.
      if from[i] then restart[#restart + 1] = h.name end
    elseif seen then
      set[#set + 1] = h.name
      set[#set + 1] = seen
    end
  end
  if #set > 0 then
    call_chunked('HSET', k.reclaim_from, set, 2)
    walked = true
  end
  call_ids('HDEL', k.reclaim_from, {}, restart)
end

local reclaimed = park(k, park_ids, park_at)
bury(k, dead, now)
if reclaimed > 0 then
  wake(k)
else
  -- The wake-up stream's one entry sits in a node Redis sizes for many (about 4.7 KB on
  -- Redis 7.0); a minute after it was written it has woken every claim it could, and goes.
  local w = redis.call('XRANGE', k.wake, '-', '+', 'COUNT', 1)
  if w[1] and id_ms(w[1][1]) < now - wake_keep_ms then redis.call('DEL', k.wake) end
end

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
      redis.call('HDEL', k.reclaim_from, t['name'])
      removed = removed + 1
    end
  end
end

if reclaimed > 0 then redis.call('HINCRBY', k.counters, 'reclaimed', reclaimed) end
if #dead > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', #dead) end
if reclaimed > 0 or #dead > 0 or walked then
  keep_ttl(k, {k.retry, k.wake, k.dead, k.dead_index, k.dead_order, k.dead_refs, k.reclaim_from})
end
return {reclaimed, #dead, removed, next_expiry, more, expired, unfinished}
