-- stats.lua: read a group's state in one consistent snapshot, ages on the Redis clock.
-- Read-only, and O(ARGV[3] + log N) (O(ARGV[4] + log N) where Redis cannot tell the lag): no
-- count walks a queue.
--
-- Ready: entries the group has not read (unread: the lag) that are due, plus retries due.
-- Delayed: unread entries whose due time is to come, plus retries not due yet. Pending: the
-- PEL except the parking consumer's entries.
--
-- Unread: XINFO GROUPS's lag. Where Redis cannot tell it (6.2; on 7, after an XDEL past the
-- group's last-delivered-id) they are counted up to ARGV[4]; beyond that, the stream's length
-- while the group has read nothing the stream retains; else, on Redis 7, the stream's
-- entries-added less the group's entries-read (too high by the entries deleted past the
-- group's position); else ARGV[4].
--
-- Unread and not due (the topic's delayed ZSET holds due times by entry ID, for all groups;
-- an entry the operator made due for this group, marks ':r', is due at its publish time):
-- exact when the first ARGV[3] unread entries are all of them (their due times are read with
-- one ZMSCORE, and their run marks with one more when the group has marks), or when at most
-- ARGV[3] delayed entries are not due (those are looked at, and their run marks).
-- Otherwise it is estimated as the not-due delayed entries less this group's retries not
-- due, within what the windows prove: exact when every not-due delayed entry the group has
-- passed waits in its retry ZSET (how claim parks them) and no other retry is scheduled
-- later than now (no nack delay pending).
--
-- Oldest ready: the oldest due time among due retries and the first ARGV[3] unread entries.
-- When more unread entries are ready than that window holds, the publish time of the last
-- entry in it counts too: a later entry cannot have been due before it was published. So the
-- age is exact when the window holds every unread entry or one published without a delay;
-- else it is an upper bound.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET) the group's
-- KEYS[3] -> delayed (ZSET) the topic's
-- KEYS[4] -> counters (HASH) the group's
-- KEYS[5] -> published (STRING) the topic's
-- KEYS[6] -> pending_at (ZSET) the group's
-- KEYS[7] -> dead (STREAM) the group's dead letters
-- KEYS[8] -> paused (SET) the topic's paused groups
-- KEYS[9] -> marks (ZSET) the group's: unread entries an operator deleted or made due
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> window: unread entries and not-due delayed entries looked at one by one
-- ARGV[4] -> the most unread entries counted one by one when Redis cannot tell the lag
-- Returns {ready, delayed, pending, dead, oldest pending age ms, oldest ready age ms,
-- counters (HGETALL), published (0 when the group is not registered), 1 when the group is
-- paused} with ages -1 when there is none.

local k = {stream = KEYS[1], retry = KEYS[2], delayed = KEYS[3], counters = KEYS[4],
  published = KEYS[5], pending = KEYS[6], dead = KEYS[7], paused = KEYS[8], marks = KEYS[9],
  group = ARGV[1], parked = ARGV[2]}
local window, cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
local unread, delayed_unread, pending_n, oldest_ready = 0, 0, 0, nil
local retry_later = redis.call('ZCOUNT', k.retry, '(' .. now, '+inf')

-- run_now returns, per id of ids, whether an operator made it due for this group (marks
-- ':r'): one ZMSCORE, none when the group has no mark.
local function run_now(ids)
  if #ids == 0 or redis.call('EXISTS', k.marks) == 0 then return {} end
  local m = {}
  for i, id in ipairs(ids) do m[i] = pad(id) .. ':r' end
  return call_ids('ZMSCORE', k.marks, {}, m)
end

local function fields(flat)
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

local info = nil
local groups = redis.pcall('XINFO', 'GROUPS', k.stream)
if type(groups) == 'table' and not groups.err then
  for _, g in ipairs(groups) do
    local t = fields(g)
    if t['name'] == k.group then info = t end
  end
end

if info then
  local last = info['last-delivered-id']
  local page, asked = {}, window
  if info['lag'] then
    unread = tonumber(info['lag'])
    if unread > 0 then page = redis.call('XRANGE', k.stream, '(' .. last, '+', 'COUNT', window) end
  else
    asked = cap
    page = redis.call('XRANGE', k.stream, '(' .. last, '+', 'COUNT', cap)
    unread = #page
    if #page == cap then
      local s = fields(redis.call('XINFO', 'STREAM', k.stream))
      local first = s['first-entry']
      if first and id_cmp(last, first[1]) < 0 then
        unread = tonumber(s['length'])
      elseif s['entries-added'] and info['entries-read'] then
        unread = math.max(cap, math.min(tonumber(s['length']),
          tonumber(s['entries-added']) - tonumber(info['entries-read'])))
      end
    end
  end
  -- The window: the first unread entries, their due times in one ZMSCORE.
  local seen, seen_delayed, seen_ready = #page, 0, 0
  -- The window holds every unread entry still in the stream (the lag also counts trimmed ones).
  local whole = seen < asked or seen >= unread
  local delayed_left = redis.call('ZCOUNT', k.delayed, '(' .. now, '+inf')
  if seen > 0 then
    local dues, run = {}, {}
    if redis.call('EXISTS', k.delayed) == 1 then
      local ids = {}
      for i, e in ipairs(page) do ids[i] = e[1] end
      dues = call_ids('ZMSCORE', k.delayed, {}, ids)
      local later = {}
      for i, id in ipairs(ids) do
        if dues[i] and tonumber(dues[i]) > now then later[#later + 1] = id end
      end
      for i, r in pairs(run_now(later)) do
        if r then run[later[i]] = true end
      end
    end
    for i, e in ipairs(page) do
      local d = dues[i] and tonumber(dues[i]) or published_at(e[1], now)
      if run[e[1]] then d = published_at(e[1], now) end
      if d > now then
        seen_delayed = seen_delayed + 1
      else
        seen_ready = seen_ready + 1
        if not oldest_ready or d < oldest_ready then oldest_ready = d end
      end
    end
  end
  if whole then
    delayed_unread = seen_delayed
  elseif delayed_left > 0 then
    -- The not-due delayed entries due first: those after the group's position are unread.
    local found, after = 0, {}
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', k.delayed, '(' .. now, '+inf', 'LIMIT', 0, window)) do
      if id_cmp(id, last) > 0 then after[#after + 1] = id end
    end
    local run = run_now(after)
    for i = 1, #after do
      if not run[i] then found = found + 1 end
    end
    if delayed_left <= window then
      delayed_unread = found
    else
      delayed_unread = math.max(0, math.min(math.max(delayed_left - retry_later, found, seen_delayed),
        unread - seen_ready))
    end
  end
  if not whole and unread - delayed_unread > seen_ready then
    local bound = published_at(page[#page][1], now)
    if not oldest_ready or bound < oldest_ready then oldest_ready = bound end
  end
  local summary = redis.call('XPENDING', k.stream, k.group)
  pending_n = tonumber(summary[1])
  for _, c in ipairs(summary[4] or {}) do
    if c[1] == k.parked then pending_n = pending_n - tonumber(c[2]) end
  end
end

local first_due = redis.call('ZRANGEBYSCORE', k.retry, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
if first_due[2] then
  local s = tonumber(first_due[2])
  if not oldest_ready or s < oldest_ready then oldest_ready = s end
end
local ready = unread - delayed_unread + redis.call('ZCOUNT', k.retry, '-inf', now)
local delayed = delayed_unread + retry_later

local function age(since)
  if not since then return -1 end
  return math.max(0, now - since)
end
local first_pending = redis.call('ZRANGE', k.pending, 0, 0, 'WITHSCORES')
return {ready, delayed, pending_n, redis.call('XLEN', k.dead),
  age(first_pending[2] and tonumber(first_pending[2])), age(oldest_ready),
  redis.call('HGETALL', k.counters), info and tonumber(redis.call('GET', k.published) or '0') or 0,
  redis.call('SISMEMBER', k.paused, k.group)}
