-- claim.lua: claim up to N ready messages of a group for a consumer, in due order: retries
-- whose due time has come (the retry ZSET) and entries the group has not read yet
-- (XREADGROUP ... >, without BLOCK: scripts cannot block).
--
-- An unread entry is due when it was published, or at its due time when it was published
-- with a delay (topic's delayed ZSET). Unread entries not due yet are parked right away:
-- given to the parking consumer with delivery count 0 and scheduled in the retry ZSET.
-- Candidates are ordered by (due time, ID) and the first N delivered; unread candidates beyond
-- N are parked likewise, so that the next claim takes them in order. Reading stops when N
-- candidates are known and no later entry can come before them, or after a scan bound.
--
-- A retry is delivered with XCLAIM ... RETRYCOUNT count+1: its attempt. An unread entry is
-- delivered by the XREADGROUP itself, attempt 1. The lease is the entry's idle time in the
-- PEL, measured against the consumer's lease, recorded here (leases HASH).
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET padded id -> due ms) the group's parked deliveries
-- KEYS[3] -> delayed (ZSET id -> due ms) the topic's delayed entries
-- KEYS[4] -> counters (HASH) the group's
-- KEYS[5] -> leases (HASH consumer -> lease ms) the group's
-- KEYS[6] -> pending_at (ZSET id -> claimed at ms) the group's
-- KEYS[7] -> published (STRING) the topic's publish counter (to create a missing group)
-- ARGV[1] -> group
-- ARGV[2] -> consumer
-- ARGV[3] -> the parking consumer's name
-- ARGV[4] -> N, the most messages to claim
-- ARGV[5] -> lease in ms
-- ARGV[6] -> the most unread entries to read in this call
-- Returns {wait, last, id1, attempt1, fields1, id2, ...}: with nothing claimed, wait is the ms
-- until the earliest retry is due (-1: none, 0: call again at once) and last the group's
-- last-delivered-id, after which a new entry is worth waiting for (XREAD BLOCK); otherwise
-- wait is -1 and last ''. fields is the entry's flat field/value list.

local k = {stream = KEYS[1], retry = KEYS[2], delayed = KEYS[3], counters = KEYS[4],
  leases = KEYS[5], pending = KEYS[6], published = KEYS[7], group = ARGV[1], parked = ARGV[3]}
local consumer, n, scan = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[6])
local now = now_ms()
prune_delayed(k, now)
redis.call('HSET', k.leases, consumer, ARGV[5])

local function before(a, b)
  if a.due ~= b.due then return a.due < b.due end
  return a.key < b.key
end

local cands = {}
local due = redis.call('ZRANGEBYSCORE', k.retry, '-inf', now, 'WITHSCORES', 'LIMIT', 0, n)
for i = 1, #due, 2 do
  cands[#cands + 1] = {key = due[i], due = tonumber(due[i + 1]), retry = true}
end

-- keep sorts the candidates and parks the unread ones beyond the first n.
local function keep()
  table.sort(cands, before)
  for i = #cands, n + 1, -1 do
    local c = cands[i]
    if not c.retry then park(k, c.id, c.due, 0) end
    cands[i] = nil
  end
end

local read, last, again = 0, nil, false
while true do
  local r = redis.pcall('XREADGROUP', 'GROUP', k.group, consumer, 'COUNT', n, 'STREAMS', k.stream, '>')
  if type(r) == 'table' and r.err then
    if not string.find(r.err, 'NOGROUP', 1, true) then error(r) end
    -- The group is gone (or was never created): recreate it for new entries.
    create_group(k, '$')
    r = false
  end
  if not r then break end
  local entries = r[1][2]
  for _, e in ipairs(entries) do
    local id = e[1]
    local d = redis.call('ZSCORE', k.delayed, id)
    d = d and tonumber(d) or published_at(id, now)
    if d > now then
      park(k, id, d, 0)
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

local out = {-1, ''}
local got = 0
for _, c in ipairs(cands) do
  if c.retry then
    local id = unpad(c.key)
    redis.call('ZREM', k.retry, c.key)
    local owner, count = pending(k, id)
    if owner == k.parked then
      local r = redis.call('XCLAIM', k.stream, k.group, consumer, 0, id, 'RETRYCOUNT', count + 1)
      if r[1] and r[1][2] then
        out[#out + 1] = id
        out[#out + 1] = count + 1
        out[#out + 1] = r[1][2]
        redis.call('ZADD', k.pending, now, id)
        got = got + 1
      else
        -- Trimmed or deleted from the stream: nothing left to deliver.
        redis.call('XACK', k.stream, k.group, id)
        again = true
      end
    else
      -- Acked, or taken by another program meanwhile: a stale schedule.
      again = true
    end
  else
    out[#out + 1] = c.id
    out[#out + 1] = 1
    out[#out + 1] = c.fields
    redis.call('ZADD', k.pending, now, c.id)
    got = got + 1
  end
end

if got > 0 then
  redis.call('HINCRBY', k.counters, 'claimed', got)
  return out
end
if again then
  out[1] = 0
  return out
end
local first = redis.call('ZRANGE', k.retry, 0, 0, 'WITHSCORES')
if first[2] then out[1] = math.max(1, tonumber(first[2]) - now) end
if last then
  out[2] = last
else
  out[2] = '0-0'
  for _, g in ipairs(groups_of(k)) do
    if g.name == k.group then out[2] = g.last end
  end
end
return out
