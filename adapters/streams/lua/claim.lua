-- claim.lua: claim up to N ready messages of a group for a consumer, in due order: retries
-- whose due time has come (the retry ZSET) and entries the group has not read yet
-- (XREADGROUP ... >, without BLOCK: scripts cannot block).
--
-- An unread entry is due when it was published, or at its due time when it was published
-- with a delay (topic's delayed ZSET). Unread entries not due yet are parked: given to the
-- parking consumer with delivery count 0 and scheduled in the retry ZSET. Candidates are
-- ordered by (due time, ID) and the first N delivered; unread candidates beyond N are parked
-- likewise, so that the next claim takes them in order. Reading stops when N candidates are
-- known and no later entry can come before them, or after a scan bound.
--
-- A retry is delivered with XCLAIM ... RETRYCOUNT count+1: its attempt. An unread entry is
-- delivered by the XREADGROUP itself, attempt 1. The lease is the entry's idle time in the
-- PEL, measured against the consumer's lease, recorded here (leases HASH) when it claims.
--
-- Per call, not per entry: one ZRANGE of the first N retries (the due ones and the earliest
-- not due), one ZMSCORE of due times per page read (none while the topic has no delayed
-- entry), one XCLAIM and one ZADD for all it parks, one ZREM, one XPENDING and one XCLAIM per
-- attempt count for the due retries, one ZADD of pending_at, and one PTTL of the stream (see
-- keep_ttl). A claim of an idle consumer (no retry, nothing unread) runs three commands: the
-- SISMEMBER of the paused groups, that ZRANGE and the XREADGROUP; TIME only when a retry or
-- an entry needs it, XINFO GROUPS only when the caller knows no position. A claim that takes
-- entries writes the consumer's place in holders (ZADD LT: the earliest lease it may hold), and
-- its lease record only when that ZADD added it. quiet is reclaim.lua's to fill, when a holder
-- leaves holders holding nothing; but only an XREADGROUP that reads entries makes the consumer
-- in the group (one that reads nothing makes none), so a claim whose read found entries and
-- parked or dropped them all indexes its consumer in quiet itself. One deleted while idle is
-- made and indexed again by its next claim that reads something.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET padded id -> due ms) the group's parked deliveries
-- KEYS[3] -> delayed (ZSET id -> due ms) the topic's delayed entries
-- KEYS[4] -> counters (HASH) the group's
-- KEYS[5] -> leases (HASH consumer -> lease ms) the group's
-- KEYS[6] -> pending_at (ZSET id -> claimed at ms) the group's
-- KEYS[7] -> published (STRING) the topic's publish counter
-- KEYS[8] -> wake (STREAM) the group's wake-up stream (see wake in lib.lua)
-- KEYS[9..12] -> dead (STREAM), dead_index (HASH), dead_refs (HASH, the topic's), dead_order
--                (ZSET): the dead-letter store, for retries whose entry is gone (see bury)
-- KEYS[13] -> paused (SET) the topic's paused groups
-- KEYS[14] -> marks (ZSET) the group's: unread entries deleted (':d') or made due (':r') by
--             an operator
-- KEYS[15] -> tombs (ZSET) the topic's tombstones (luakit's common.lua)
-- KEYS[16] -> holders (ZSET consumer -> ms) the group's consumers that may hold entries, by
--             when the earliest of their leases may expire (reclaim.lua's index)
-- KEYS[17] -> quiet (ZSET consumer -> ms) the group's consumers, by when they count as quiet
--             (reclaim.lua removes quiet ones that hold nothing)
-- ARGV[1] -> group
-- ARGV[2] -> consumer
-- ARGV[3] -> the parking consumer's name
-- ARGV[4] -> N, the most messages to claim
-- ARGV[5] -> lease in ms
-- ARGV[6] -> the most unread entries to read in this call
-- ARGV[7] -> the stream position the caller knows ('' none): the last of an earlier reply
--            whose wait no entry of the stream has ended since; returned as last when this
--            call reads nothing, instead of the group's last-delivered-id
-- ARGV[8] -> '1' to return the wake-up stream's last ID, '0' when the caller knows it
-- ARGV[9] -> topic (recorded with dead letters)
-- ARGV[10] -> '1': delete-on-ack retention (for entries deleted unread)
-- ARGV[11] -> quiet period in ms: a consumer that claims nothing for that long counts as quiet
--             (-1: consumers are kept, none is indexed)
-- Returns {wait, last, wake, id1, attempt1, fields1, id2, ...}: with nothing claimed, wait is
-- the ms until the earliest retry is due (-1: none, 0: call again at once), last a stream
-- position after which a new entry is worth waiting for (XREAD BLOCK; no unread entry lies
-- after it), and wake the wake-up stream's last ID ('0-0': none yet; '' when not asked);
-- otherwise wait is -1 and last and wake ''. fields is the entry's flat field/value list.
-- A paused group claims nothing: {-2, '', ''}. A group that is not registered fails with an
-- error reply, and nothing is written: 'NOGROUP relq: group deleted' under a tombstone (an
-- operator deleted it), else 'NOGROUP relq: group lost' (it vanished: the caller registers
-- it again).
--
-- An unread entry an operator deleted (marks ':d') is acked when read, never delivered; one
-- made due (':r') is due at its publish time. Marks up to the group's new position go.

local k = {stream = KEYS[1], retry = KEYS[2], delayed = KEYS[3], counters = KEYS[4],
  leases = KEYS[5], pending = KEYS[6], published = KEYS[7], wake = KEYS[8], dead = KEYS[9],
  dead_index = KEYS[10], dead_refs = KEYS[11], dead_order = KEYS[12], paused = KEYS[13],
  marks = KEYS[14], tombs = KEYS[15], holders = KEYS[16], quiet = KEYS[17], group = ARGV[1],
  parked = ARGV[3], topic = ARGV[9]}
local consumer, n, scan = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[6])
local quiet_ms = tonumber(ARGV[11])
if redis.call('SISMEMBER', k.paused, k.group) == 1 then return {-2, '', ''} end

-- The clock is read when something needs it: an idle claim has nothing to compare.
local now
local function clock()
  if not now then now = now_ms() end
  return now
end

local function before(a, b)
  if a.due ~= b.due then return a.due < b.due end
  return a.key < b.key
end

-- The first N retries: those due are candidates; the first one not due tells the wait.
local cands = {}
local earliest -- due ms of the earliest retry not due, or of the earliest entry parked here
local head = redis.call('ZRANGE', k.retry, 0, n - 1, 'WITHSCORES')
for i = 1, #head, 2 do
  local at = tonumber(head[i + 1])
  if at > clock() then
    earliest = at
    break
  end
  cands[#cands + 1] = {key = head[i], due = at, retry = true}
end

-- Unread entries to park (not due yet, or beyond the first n), parked together at the end.
local park_ids, park_at = {}, {}
local function to_park(id, at)
  park_ids[#park_ids + 1] = id
  park_at[#park_at + 1] = at
  if not earliest or at < earliest then earliest = at end
end

-- keep sorts the candidates and parks the unread ones beyond the first n.
local function keep()
  table.sort(cands, before)
  for i = #cands, n + 1, -1 do
    local c = cands[i]
    if not c.retry then to_park(c.id, c.due) end
    cands[i] = nil
  end
end

local read, last, again, delayed_n, marked = 0, nil, false, nil, nil
local dropped = {}
while true do
  local r = redis.pcall('XREADGROUP', 'GROUP', k.group, consumer, 'COUNT', n, 'STREAMS', k.stream, '>')
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'NOGROUP', 1, true) then
      if tombstoned(k.tombs, k.group, clock()) then return redis.error_reply('NOGROUP relq: group deleted') end
      return redis.error_reply('NOGROUP relq: group lost')
    end
    error(r)
  end
  if not r then break end
  local entries = r[1][2]
  -- One ZMSCORE per page for the due times of delayed entries, none when nothing is delayed;
  -- one for the marks, none when the group has none.
  if delayed_n == nil then
    delayed_n = prune_delayed(k, clock())
    marked = redis.call('EXISTS', k.marks) == 1
  end
  local ids = {}
  for i, e in ipairs(entries) do ids[i] = e[1] end
  local dues, marks = {}, {}
  if delayed_n > 0 then dues = call_ids('ZMSCORE', k.delayed, {}, ids) end
  if marked then
    local m = {}
    for _, id in ipairs(ids) do
      m[#m + 1] = pad(id) .. ':d'
      m[#m + 1] = pad(id) .. ':r'
    end
    marks = call_ids('ZMSCORE', k.marks, {}, m)
  end
  for i, e in ipairs(entries) do
    local id = e[1]
    local d = dues[i] and tonumber(dues[i]) or published_at(id, now)
    if marks[2 * i] then d = published_at(id, now) end
    if marks[2 * i - 1] then
      dropped[#dropped + 1] = id
    elseif d > now then
      to_park(id, d)
    else
      cands[#cands + 1] = {key = pad(id), due = d, id = id, fields = e[2]}
    end
  end
  read = read + #entries
  last = entries[#entries][1]
  keep()
  if #entries < n then break end
  -- Later entries are due at their publish time or later, and have higher IDs: none can
  -- come before a candidate that is not after the last entry read.
  if #cands == n and not before({due = published_at(last, now), key = pad(last)}, cands[n]) then break end
  if read >= scan then
    again = true
    break
  end
end
-- Read, so pending under this consumer: parked with delivery count 0, the first delivery
-- will be attempt 1.
park(k, park_ids, park_at, 0)
if #dropped > 0 then
  call_ids('XACK', k.stream, {k.group}, dropped)
  if ARGV[10] == '1' then
    local others = {}
    for _, g in ipairs(groups_of(k)) do
      if g.name ~= k.group then others[#others + 1] = g end
    end
    xdel(k, unneeded(k, dropped, others))
  end
end
if marked and last then redis.call('ZREMRANGEBYLEX', k.marks, '-', '[' .. pad(last) .. ':~') end

-- Due retries: the parking consumer must still hold them (else a stale schedule: acked, or
-- taken by another program meanwhile). One ZREM of their schedules, one XPENDING, and one
-- XCLAIM per delivery count among them.
local retry_keys, retry_ids = {}, {}
for _, c in ipairs(cands) do
  if c.retry then
    c.id = unpad(c.key)
    retry_keys[#retry_keys + 1] = c.key
    retry_ids[#retry_ids + 1] = c.id
  end
end
local claimed = {}
if #retry_ids > 0 then
  call_ids('ZREM', k.retry, {}, retry_keys)
  local pel = pel_of(k, retry_ids, k.parked)
  local by_count = {}
  for _, id in ipairs(retry_ids) do
    local p = pel[id]
    if p and p[1] == k.parked then
      local c = p[2] + 1
      by_count[c] = by_count[c] or {}
      table.insert(by_count[c], id)
    else
      again = true
    end
  end
  for count, ids in pairs(by_count) do
    local got = call_ids('XCLAIM', k.stream, {k.group, consumer, 0}, ids, {'RETRYCOUNT', count})
    for _, e in ipairs(got) do
      if e and e[2] then claimed[e[1]] = {count, e[2]} end
    end
    -- Trimmed or deleted from the stream (Redis 6.2 keeps them in the PEL, 7 drops them):
    -- nothing left to deliver, so they are dead-lettered with the reason, not dropped unseen.
    local gone = {}
    for _, id in ipairs(ids) do
      if not claimed[id] then gone[#gone + 1] = id end
    end
    if #gone > 0 then
      bury_missing(k, gone, count)
      call_ids('ZREM', k.pending, {}, gone)
      again = true
    end
  end
end

local out = {-1, '', ''}
local at = {}
for _, c in ipairs(cands) do
  if c.retry then
    local got = claimed[c.id]
    if got then
      out[#out + 1] = c.id
      out[#out + 1] = got[1]
      out[#out + 1] = got[2]
      at[#at + 1] = now
      at[#at + 1] = c.id
    end
  else
    out[#out + 1] = c.id
    out[#out + 1] = 1
    out[#out + 1] = c.fields
    at[#at + 1] = now
    at[#at + 1] = c.id
  end
end

if #at > 0 then
  -- The lease record is written when the consumer joins holders: it stays while the
  -- consumer is there (a subscription's lease does not change), and the heartbeat keeps it.
  if redis.call('ZADD', k.holders, 'LT', clock() + tonumber(ARGV[5]), consumer) == 1 then
    redis.call('HSET', k.leases, consumer, ARGV[5])
  end
  call_chunked('ZADD', k.pending, at, 2)
  redis.call('HINCRBY', k.counters, 'claimed', #at / 2)
  keep_ttl(k, {k.leases, k.pending, k.retry, k.holders})
  return out
end
-- The XREADGROUP made the consumer if it read anything, even if all it read was parked or
-- dropped: it is indexed as quiet a quiet period from now, so that reclaim deletes it then
-- unless it holds something.
if read > 0 and quiet_ms >= 0 then
  redis.call('ZADD', k.quiet, clock() + (quiet_ms > 0 and quiet_ms or tonumber(ARGV[5])), consumer)
  keep_ttl(k, {k.quiet})
end
if #park_ids > 0 then keep_ttl(k, {k.retry}) end
if again then
  out[1] = 0
  return out
end
-- Nothing claimed, so no retry was due: the earliest one is the first not due that the ZRANGE
-- met, or one parked here, whichever is sooner.
if earliest then out[1] = math.max(1, earliest - clock()) end
if last then
  out[2] = last
elseif ARGV[7] ~= '' then
  out[2] = ARGV[7]
else
  out[2] = '0-0'
  for _, g in ipairs(groups_of(k)) do
    if g.name == k.group then out[2] = g.last end
  end
end
if ARGV[8] == '1' then
  -- The wake-up stream holds its last entry only (MAXLEN 1).
  local w = redis.call('XRANGE', k.wake, '-', '+', 'COUNT', 1)
  out[3] = w[1] and w[1][1] or '0-0'
end
return out
