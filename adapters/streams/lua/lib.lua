-- lib.lua: helpers prepended to every script of the streams adapter (see scripts.go), after
-- internal/luakit's common.lua (now_ms). It declares no keys: every helper takes key names
-- that the calling script received in KEYS, gathered in a table k (k.stream, k.retry, ...),
-- with the group name (k.group) and the parking consumer's name (k.parked) from ARGV.

-- Entry IDs are "<ms>-<seq>". Both parts are compared as decimal strings (length, then
-- bytes), which is exact for any 64-bit value, where Lua numbers are doubles.
local function id_parts(id)
  return string.match(id, '^(%d+)%-(%d+)$')
end

local function strip(s)
  local t = string.gsub(s, '^0+', '')
  if t == '' then return '0' end
  return t
end

local function num_cmp(a, b)
  a, b = strip(a), strip(b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  if a == b then return 0 end
  return a < b and -1 or 1
end

local function id_cmp(a, b)
  local am, as = id_parts(a)
  local bm, bs = id_parts(b)
  local c = num_cmp(am, bm)
  if c ~= 0 then return c end
  return num_cmp(as, bs)
end

-- The milliseconds part of an ID: the time the entry was published.
local function id_ms(id)
  return tonumber((id_parts(id)))
end

-- published_at is when an entry without a delay became due: its publish time, but never
-- after now (after a clock step back Redis keeps issuing IDs from its last time, and other
-- writers may choose IDs ahead of the clock).
local function published_at(id, now)
  return math.min(id_ms(id), now)
end

-- The retry ZSET orders members due at the same millisecond as strings. Its members are
-- IDs with both parts zero-padded to 20 digits, so that string order is ID order ("9" would
-- sort after "10" otherwise); pad and unpad convert.
local function pad20(s) return string.rep('0', 20 - #s) .. s end

local function pad(id)
  local ms, seq = id_parts(id)
  return pad20(ms) .. '-' .. pad20(seq)
end

local function unpad(m)
  local ms, seq = id_parts(m)
  return strip(ms) .. '-' .. strip(seq)
end

-- pending returns the consumer holding id in the group's PEL and its delivery count, or nil
-- when id is not pending (acked, dead-lettered, never read) or the group does not exist.
local function pending(k, id)
  local r = redis.pcall('XPENDING', k.stream, k.group, id, id, 1)
  if type(r) ~= 'table' or r.err or not r[1] then return nil end
  return r[1][2], tonumber(r[1][4])
end

-- park gives id (pending in the group) to the parking consumer and schedules it in the retry
-- ZSET at score (ms). XCLAIM ... JUSTID keeps the delivery count, unless count is given
-- (RETRYCOUNT). Returns false when the entry no longer exists in the stream (Redis 7 drops it
-- from the PEL then).
local function park(k, id, score, count)
  local r
  if count then
    r = redis.call('XCLAIM', k.stream, k.group, k.parked, 0, id, 'RETRYCOUNT', count, 'JUSTID')
  else
    r = redis.call('XCLAIM', k.stream, k.group, k.parked, 0, id, 'JUSTID')
  end
  redis.call('ZREM', k.pending, id)
  if not r[1] then return false end
  redis.call('ZADD', k.retry, score, pad(id))
  return true
end

-- bury moves id (pending in the group) to the group's dead-letter stream, atomically with its
-- XACK: a record of id, reason, attempts, dead-at, topic and group, followed by the entry's own
-- fields (none if the entry was trimmed away). k.dead_refs counts, per ID, the groups that
-- keep it as a dead letter, so that delete-on-ack keeps the entry for a requeue.
local function bury(k, id, attempts, reason, now)
  local rec = {'_relq_id', id, '_relq_reason', reason, '_relq_attempts', attempts,
    '_relq_dead_at', now, '_relq_topic', k.topic, '_relq_group', k.group}
  local e = redis.call('XRANGE', k.stream, id, id)
  if e[1] then
    for _, v in ipairs(e[1][2]) do rec[#rec + 1] = v end
  end
  local dl = redis.call('XADD', k.dead, '*', unpack(rec))
  redis.call('HSET', k.dead_index, id, dl)
  redis.call('HINCRBY', k.dead_refs, id, 1)
  redis.call('XACK', k.stream, k.group, id)
  redis.call('ZREM', k.retry, pad(id))
  redis.call('ZREM', k.pending, id)
end

-- unref drops one group's dead-letter reference to id.
local function unref(k, id)
  if redis.call('HINCRBY', k.dead_refs, id, -1) <= 0 then
    redis.call('HDEL', k.dead_refs, id)
  end
end

-- create_group creates k.group at start ('0': every retained entry; '$': new ones only),
-- with the stream if missing, and records the topic's publish counter as the group's base,
-- so that its "published" counter counts what was routed to it. Returns 1 when created,
-- 0 when the group existed.
local function create_group(k, start)
  local r = redis.pcall('XGROUP', 'CREATE', k.stream, k.group, start, 'MKSTREAM')
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'BUSYGROUP', 1, true) then return 0 end
    error(r)
  end
  local base = tonumber(redis.call('GET', k.published) or '0')
  if start == '0' then base = base - redis.call('XLEN', k.stream) end
  redis.call('HSET', k.counters, 'published_base', base)
  return 1
end

-- groups_of lists every consumer group of the stream, relq's or not, with its
-- last-delivered-id.
local function groups_of(k)
  local r = redis.pcall('XINFO', 'GROUPS', k.stream)
  if type(r) ~= 'table' or r.err then return {} end
  local out = {}
  for _, g in ipairs(r) do
    local t = {}
    for i = 1, #g, 2 do t[g[i]] = g[i + 1] end
    out[#out + 1] = {name = t['name'], last = t['last-delivered-id']}
  end
  return out
end

-- unneeded reports whether no group needs id any more (delete-on-ack): every group has read
-- it, none holds it pending (parked retries included), and none keeps it as a dead letter.
local function unneeded(k, id, groups)
  if redis.call('HEXISTS', k.dead_refs, id) == 1 then return false end
  for _, g in ipairs(groups) do
    if id_cmp(id, g.last) > 0 then return false end
    if redis.call('XPENDING', k.stream, g.name, id, id, 1)[1] then return false end
  end
  return true
end

-- xdel deletes ids from the stream in bounded calls.
local function xdel(k, ids)
  for i = 1, #ids, 1000 do
    redis.call('XDEL', k.stream, unpack(ids, i, math.min(i + 999, #ids)))
  end
end

-- Delayed publishes keep their due time in the topic's delayed ZSET until long after it
-- passed, so that a group reading them late still orders them by due time; then they go.
local delayed_horizon_ms = 3600000

local function prune_delayed(k, now)
  redis.call('ZREMRANGEBYSCORE', k.delayed, '-inf', '(' .. (now - delayed_horizon_ms))
end
