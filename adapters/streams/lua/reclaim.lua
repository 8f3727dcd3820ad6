-- reclaim.lua: return a group's expired leases to the retry ZSET (or the dead letters), tidy
-- pending_at, delete consumers that are quiet and hold nothing, and tell when the next lease
-- may expire. What one call reads is bounded whatever the number of consumers the group has
-- had and the entries they hold: it never reads the group's consumer list (XINFO CONSUMERS,
-- the XPENDING summary), only two indexes that the scripts keep in the topic's hash tag.
--
-- A lease is the PEL idle time of an entry (reset by claims and heartbeats) measured against
-- its holder's lease, which Claim and Extend record per consumer (leases HASH); a consumer
-- without a record (another program's) gets the orphan lease.
--
-- holders (ZSET consumer -> ms) holds the consumers that may hold entries, scored by when the
-- earliest of their leases may expire: claim.lua adds a consumer that takes entries (ZADD LT,
-- its new lease's end), and this script rescores each one it reads. Each call takes the
-- holders that are due, at most S = ARGV[9] of them, and reads each one's entries
-- (XPENDING ... consumer) from where its walk stopped (reclaim_from HASH), within a budget of
-- max(W, N) entries per call shared by them (W = ARGV[8]); a walk that reads to the end of a
-- consumer's PEL starts over at its lowest ID on the next call. A holder is then scored by the
-- earliest running lease it read, or leaves holders when its whole PEL was read and nothing of
-- it is leased any more (it is empty once this call parks what expired). XPENDING ... IDLE
-- would find only the expired ones, but reads the consumer's whole PEL to do so. XCLAIM ...
-- JUSTID parks the expired ones without counting an attempt; those whose count reached max
-- deliveries are dead-lettered.
--
-- Holders no relq claim indexed (another program's consumers in the same group, or an index
-- deleted by hand) are found by a walk of the group's whole PEL, W entries per call, from
-- where the last call stopped (the parking consumer's field of reclaim_from), and made due,
-- before the due holders are read. Such a holder has no lease record: the orphan lease of
-- the call that reads it judges its entries and scores it.
--
-- quiet (ZSET consumer -> ms) holds relq's consumers that held nothing when last looked at,
-- scored by when they count as quiet: a quiet period (ARGV[7]: Options.ConsumerIdleTimeout,
-- or the consumer's lease) after this script found a holder empty, or after a claim whose read
-- parked all it read. So claims that take entries write nothing for it. Each call takes up to
-- S quiet ones: one back in holders (a claim took entries since) just leaves quiet; one that
-- holds nothing is deleted (XGROUP DELCONSUMER, which would drop PEL entries: only with none),
-- with its lease and walk; one that holds entries is made due in holders and looked at again
-- a quiet period later. A live subscription's consumer deleted while idle is
-- made and indexed again by its next claim that takes entries (an XREADGROUP that reads
-- nothing makes no consumer).
--
-- The next expiry is the lowest score in holders after the call. A call that found expired
-- entries in a walk that it did not read whole, stopped at N, left a holder due, or met S
-- quiet consumers, reports more, so that the caller runs again at once.
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
-- KEYS[12] -> reclaim_from (HASH consumer -> PEL entry ID) where the walk of each holder goes
--             on; the parking consumer's field: where the walk of the whole PEL goes on
-- KEYS[13] -> ephemeral (ZSET group -> expiry ms) the topic's ephemeral groups
-- KEYS[14] -> deleting (SET) the topic's groups whose delete is unfinished
-- KEYS[15] -> holders (ZSET consumer -> ms) the group's
-- KEYS[16] -> quiet (ZSET consumer -> ms) the group's
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> max deliveries (0: no limit)
-- ARGV[4] -> orphan lease in ms: the lease of consumers without a record
-- ARGV[5] -> N, the most expired deliveries handled
-- ARGV[6] -> topic (recorded with dead letters)
-- ARGV[7] -> quiet period in ms (0: each consumer's lease; -1: keep quiet consumers)
-- ARGV[8] -> W: PEL entries per call of the whole-PEL walk, and the least entry budget
-- ARGV[9] -> S: the most holders, and the most quiet consumers, looked at per call
-- Per call, whatever the group has had: one ZRANGEBYSCORE of holders, two HMGETs and at most
-- S XPENDINGs reading at most max(W, N) entries in all, one HSET, HDEL, ZREM and ZADD of what
-- they found; one HGET, one XPENDING of W entries and at most two writes for the whole-PEL
-- walk; one ZRANGEBYSCORE of quiet, at most S XPENDINGs of one entry and S XGROUP
-- DELCONSUMERs, and one ZREM, HDEL and ZADD per index for them; one XCLAIM, one ZADD of
-- schedules, one ZREM of pending_at and one XADD to the wake-up stream for all it found
-- expired, or else one XRANGE of the wake-up stream (deleted a minute after its last entry).
-- Returns {reclaimed, dead_lettered, removed consumers, ms until the earliest lease a holder
-- may hold expires (-1: none), 1 if more may have expired already, else 0, an ephemeral group
-- of the topic that expired, a group of the topic whose delete is unfinished} ('': none; the
-- caller deletes them). On a group that is not registered it changes no state of the group.

local k = {stream = KEYS[1], retry = KEYS[2], counters = KEYS[3], pending = KEYS[4],
  leases = KEYS[5], dead = KEYS[6], dead_index = KEYS[7], dead_refs = KEYS[8], delayed = KEYS[9],
  dead_order = KEYS[10], wake = KEYS[11], reclaim_from = KEYS[12], ephemeral = KEYS[13],
  deleting = KEYS[14], holders = KEYS[15], quiet = KEYS[16], group = ARGV[1], parked = ARGV[2],
  topic = ARGV[6]}
drain_ok(k.counters)
local max, orphan, left, quiet_ms = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[7])
local window, step = tonumber(ARGV[8]), tonumber(ARGV[9])
local wake_keep_ms = 60000
local now = now_ms()
prune_delayed(k, now)
local expired, unfinished = '', ''
if redis.call('EXISTS', k.ephemeral, k.deleting) > 0 then
  expired = redis.call('ZRANGEBYSCORE', k.ephemeral, '-inf', '(' .. now, 'LIMIT', 0, 1)[1] or ''
  unfinished = redis.call('SRANDMEMBER', k.deleting) or ''
end

local removed, next_expiry, more = 0, -1, 0
local handled, park_ids, park_at, dead = {}, {}, {}, {}
local walked = false

-- look handles one PEL entry of holder h: expired, it is parked or dead-lettered while N
-- allows; else it tells when it expires (h.soonest). It returns false when N is used up
-- before it.
local function look(h, e)
  local idle = tonumber(e[3])
  if idle < h.lease then
    local ms = h.lease - idle
    if not h.soonest or ms < h.soonest then h.soonest = ms end
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

-- The walk of the group's whole PEL, W entries a call from where the last call stopped (the
-- parking consumer's field of reclaim_from: it has no walk of its own), finds holders that no
-- relq claim indexed (another program's consumers, or an index lost by hand) and makes them
-- due: NX, so that a known holder keeps its score.
-- It is the first read of the group, and fails without it: nothing is written then.
do
  local at = redis.call('HGET', k.reclaim_from, k.parked)
  local r = redis.pcall('XPENDING', k.stream, k.group, at and ('(' .. at) or '-', '+', window)
  if type(r) ~= 'table' or r.err then return {0, 0, 0, -1, 0, expired, unfinished} end
  local add, named = {}, {}
  for _, e in ipairs(r) do
    local c = e[2]
    if c ~= k.parked and not named[c] then
      named[c] = true
      add[#add + 1] = now
      add[#add + 1] = c
    end
  end
  if #add > 0 then
    redis.call('ZADD', k.holders, 'NX', unpack(add))
    walked = true
  end
  if #r < window then
    if at then redis.call('HDEL', k.reclaim_from, k.parked) end
  else
    redis.call('HSET', k.reclaim_from, k.parked, r[#r][1])
    walked = true
  end
end

-- Holders that are due: the next part of each one's walk, while the budget lasts. Each is
-- then scored by the earliest lease it read that is still running, or dropped from holders
-- when its whole PEL was read and nothing of it is leased any more.
local due = redis.call('ZRANGEBYSCORE', k.holders, '-inf', now, 'LIMIT', 0, step)
local emptied = {} -- holders read whole and found to hold nothing once this call parks
local quiets = {} -- ZADD arguments: when each emptied relq consumer counts as quiet
if #due > 0 then
  local leases = call_ids('HMGET', k.leases, {}, due)
  local from = call_ids('HMGET', k.reclaim_from, {}, due)
  local budget = math.max(window, tonumber(ARGV[5]))
  local set, restart, scores, empty = {}, {}, {}, {}
  for i, name in ipairs(due) do
    if budget <= 0 then
      more = 1
      break
    end
    local h = {lease = tonumber(leases[i] or orphan)}
    local start = from[i] and ('(' .. from[i]) or '-'
    local asked = budget
    local r = redis.call('XPENDING', k.stream, k.group, start, '+', asked, name)
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
    -- Expired entries found, and some not read in this call: likely more expired, so the
    -- holder stays due and its walk goes on at once.
    local going = #handled > found and not (ended and not from[i])
    if going then more = 1 end
    if ended then
      -- It read to the end of the consumer's PEL: the next call starts over.
      if from[i] then restart[#restart + 1] = name end
    elseif seen then
      set[#set + 1] = name
      set[#set + 1] = seen
    end
    if ended and not from[i] and not h.soonest then
      empty[#empty + 1] = name -- holds nothing, or only what this call parks
      emptied[name] = true
      -- A relq consumer (one with a lease record) counts as quiet a quiet period from now,
      -- unless a claim takes entries before then.
      if quiet_ms >= 0 and leases[i] then
        quiets[#quiets + 1] = now + (quiet_ms > 0 and quiet_ms or h.lease)
        quiets[#quiets + 1] = name
      end
    else
      scores[#scores + 1] = (going or stopped) and now or now + (h.soonest or 0)
      scores[#scores + 1] = name
    end
  end
  if #set > 0 then
    call_chunked('HSET', k.reclaim_from, set, 2)
    walked = true
  end
  call_ids('HDEL', k.reclaim_from, {}, restart)
  call_ids('ZREM', k.holders, {}, empty)
  if #scores > 0 then call_chunked('ZADD', k.holders, scores, 2) end
  if #quiets > 0 then
    call_chunked('ZADD', k.quiet, quiets, 2)
    walked = true
  end
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

-- Quiet consumers (no claim for their quiet period), up to S: those that hold nothing are
-- deleted (XGROUP DELCONSUMER drops a consumer's PEL entries, so only then), with their
-- lease and walk; one that still holds entries is made due in holders and looked at again
-- one quiet period later. After the parking above, a dead consumer's expired entries are
-- the parking consumer's already.
if quiet_ms >= 0 then
  local q = redis.call('ZRANGEBYSCORE', k.quiet, '-inf', now, 'LIMIT', 0, step)
  if #q == step then more = 1 end
  local gone, later, hold, busy = {}, {}, {}, {}
  local qleases, held = {}, {}
  if #q > 0 then held = call_ids('ZMSCORE', k.holders, {}, q) end
  if quiet_ms == 0 and #q > 0 then qleases = call_ids('HMGET', k.leases, {}, q) end
  for i, name in ipairs(q) do
    if held[i] then
      busy[#busy + 1] = name -- a claim took entries since: holders has it again
    elseif not emptied[name] and redis.call('XPENDING', k.stream, k.group, '-', '+', 1, name)[1] then
      later[#later + 1] = now + (quiet_ms > 0 and quiet_ms or tonumber(qleases[i] or orphan))
      later[#later + 1] = name
      hold[#hold + 1] = now
      hold[#hold + 1] = name
    else
      redis.call('XGROUP', 'DELCONSUMER', k.stream, k.group, name)
      gone[#gone + 1] = name
    end
  end
  if #later > 0 then
    call_chunked('ZADD', k.quiet, later, 2)
    redis.call('ZADD', k.holders, 'NX', unpack(hold))
    walked = true
  end
  call_ids('ZREM', k.quiet, {}, gone)
  call_ids('ZREM', k.quiet, {}, busy)
  call_ids('ZREM', k.holders, {}, gone)
  call_ids('HDEL', k.leases, {}, gone)
  call_ids('HDEL', k.reclaim_from, {}, gone)
  removed = #gone
end

-- The earliest lease any holder may hold: due already (a holder beyond this call's bounds, or
-- one whose walk goes on) means more.
local head = redis.call('ZRANGE', k.holders, 0, 0, 'WITHSCORES')
if head[2] then
  local ms = tonumber(head[2]) - now
  if ms <= 0 then more = 1 else next_expiry = ms end
end

if reclaimed > 0 then redis.call('HINCRBY', k.counters, 'reclaimed', reclaimed) end
if #dead > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', #dead) end
if reclaimed > 0 or #dead > 0 or walked then
  keep_ttl(k, {k.retry, k.wake, k.dead, k.dead_index, k.dead_order, k.dead_refs, k.reclaim_from, k.holders, k.quiet})
end
return {reclaimed, #dead, removed, next_expiry, more, expired, unfinished}
