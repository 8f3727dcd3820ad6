-- lib.lua: helpers of the scripts of the streams adapter, linked into each script that uses
-- them (see scripts.go), after internal/luakit's common.lua (now_ms, call_chunked). It
-- declares no keys: every helper takes key names that the calling script received in KEYS,
-- gathered in a table k (k.stream, k.retry, ...), with the group name (k.group) and the
-- parking consumer's name (k.parked) from ARGV.

-- topic_keys gathers the topic's keys, KEYS[1..8] in the order of keys.go's topicKeys.all;
-- group_keys adds a group's own keys from KEYS[i..] (groupKeys.own).
local function topic_keys()
  return {stream = KEYS[1], published = KEYS[2], delayed = KEYS[3], dead_refs = KEYS[4],
    meta = KEYS[5], paused = KEYS[6], ephemeral = KEYS[7], deleting = KEYS[8]}
end

local group_fields = {'retry', 'leases', 'pending', 'counters', 'wake', 'reclaim_from', 'members',
  'marks', 'dead', 'dead_index', 'dead_order', 'dead_gone', 'holders', 'quiet'}

-- The group's own keys are followed by the topic's tombs ZSET (keys.go's registerKeys).
local function group_keys(k, i)
  for j, f in ipairs(group_fields) do k[f] = KEYS[i + j - 1] end
  k.tombs = KEYS[i + #group_fields]
  return k
end

-- keep_ttl gives keys the stream's time to live, when it has one: the keys of a topic whose
-- groups are all ephemeral (or that holds a backlog only) expire together, so a key that a
-- script creates after Join set the others' expiry must expire with them. One PTTL per call;
-- no more while the stream lives for good.
local function keep_ttl(k, keys)
  local ttl = redis.call('PTTL', k.stream)
  if ttl <= 0 then return end
  for _, key in ipairs(keys) do redis.call('PEXPIRE', key, ttl) end
end

-- Entry IDs are "<ms>-<seq>". Both parts are compared as decimal strings (length, then
-- bytes), which is exact for any 64-bit value, where Lua numbers are doubles.
local function id_parts(id)
  return string.match(id, '^(%d+)%-(%d+)$')
end

local function strip(s)
  if #s == 1 or string.byte(s, 1) ~= 48 then return s end
  local i = string.find(s, '[^0]')
  if not i then return '0' end
  return string.sub(s, i)
end

local function num_cmp(a, b)
  a, b = strip(a), strip(b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  if a == b then return 0 end
  return a < b and -1 or 1
end

-- id_less is ID order for IDs in Redis's own form (no leading zeros), found without a pattern
-- (a hot path compares every ID of a batch): a longer millisecond part, or the same one and a
-- longer sequence, is later, and IDs alike in both lengths compare as strings.
local function id_less(a, b)
  local da, db = string.find(a, '-', 1, true), string.find(b, '-', 1, true)
  if not da or not db or da ~= db then return (da or 0) < (db or 0) end
  if #a == #b then return a < b end
  local ma, mb = string.sub(a, 1, da), string.sub(b, 1, db)
  if ma ~= mb then return ma < mb end
  return #a < #b
end

local function id_cmp(a, b)
  if a == b then return 0 end
  local am, as = id_parts(a)
  local bm, bs = id_parts(b)
  local c = num_cmp(am, bm)
  if c ~= 0 then return c end
  return num_cmp(as, bs)
end

-- The milliseconds part of an ID: the time the entry was published.
local function id_ms(id)
  return tonumber(string.sub(id, 1, string.find(id, '-', 1, true) - 1))
end

-- published_at is when an entry without a delay became due: its publish time, but never
-- after now (after a clock step back Redis keeps issuing IDs from its last time, and other
-- writers may choose IDs ahead of the clock).
local function published_at(id, now)
  return math.min(id_ms(id), now)
end

-- The retry ZSET orders members due at the same millisecond as strings. Its members are
-- IDs with both parts zero-padded to 20 digits, so that string order is ID order ("9" would
-- sort after "10" otherwise); pad and unpad convert. pad splits at the dash without a
-- pattern: it runs once per entry on hot paths, on IDs Redis gave or found pending.
local zeros = string.rep('0', 20)

local function pad(id)
  local dash = string.find(id, '-', 1, true)
  local ms, seq = string.sub(id, 1, dash - 1), string.sub(id, dash + 1)
  return string.sub(zeros, #ms + 1) .. ms .. '-' .. string.sub(zeros, #seq + 1) .. seq
end

local function unpad(m)
  local dash = string.find(m, '-', 1, true)
  local ms, seq = string.sub(m, 1, dash - 1), string.sub(m, dash + 1)
  return strip(ms) .. '-' .. strip(seq)
end

-- call_ids runs redis.call(cmd, key, head..., ids..., tail...) over ids in slices of at most
-- 500, so that a batch costs one command per slice while unpack stays far below Lua's stack
-- limit. It returns the elements of array replies in order, and the sum of integer replies.
local function call_ids(cmd, key, head, ids, tail)
  local all, sum = {}, 0
  for i = 1, #ids, 500 do
    local args = {}
    for _, v in ipairs(head) do args[#args + 1] = v end
    for j = i, math.min(i + 499, #ids) do args[#args + 1] = ids[j] end
    for _, v in ipairs(tail or {}) do args[#args + 1] = v end
    local r = redis.call(cmd, key, unpack(args))
    if type(r) == 'table' then
      for _, v in ipairs(r) do all[#all + 1] = v end
    else
      sum = sum + r
    end
  end
  return all, sum
end

-- pending returns the consumer holding id in the group's PEL and its delivery count, or nil
-- when id is not pending (acked, dead-lettered, never read) or the group does not exist.
local function pending(k, id)
  local r = redis.pcall('XPENDING', k.stream, k.group, id, id, 1)
  if type(r) ~= 'table' or r.err or not r[1] then return nil end
  return r[1][2], tonumber(r[1][4])
end

-- pel_of is pending for a batch: a table id -> {consumer, delivery count} of the ids that are
-- pending in the group, and true as a second value when the group is not registered. One XPENDING reads the range the ids span, only consumer's entries
-- when consumer is given, up to 2 entries per id (and 16 more); an id that read cannot settle
-- (not found among consumer's: another consumer may hold it; or, with no consumer, beyond
-- where the read stopped) is asked alone. So a batch that one consumer holds costs one
-- command, whatever the PEL holds. With consumer given, the range is found with id_less,
-- exact for IDs in Redis's form; any other ID is asked alone if the read missed it.
local function pel_of(k, ids, consumer)
  local out = {}
  if #ids == 0 then return out end
  local lo, hi = ids[1], ids[1]
  for i = 2, #ids do
    local id = ids[i]
    if consumer then
      if id_less(id, lo) then lo = id end
      if id_less(hi, id) then hi = id end
    elseif id_cmp(id, lo) < 0 then
      lo = id
    elseif id_cmp(id, hi) > 0 then
      hi = id
    end
  end
  local limit = 2 * #ids + 16
  local r
  if consumer then
    r = redis.pcall('XPENDING', k.stream, k.group, lo, hi, limit, consumer)
  else
    r = redis.pcall('XPENDING', k.stream, k.group, lo, hi, limit)
  end
  if r.err then
    -- The group is not registered: the caller writes nothing.
    if string.find(r.err, 'NOGROUP', 1, true) then return out, true end
    -- An ID Redis cannot parse: ask each, which settles it.
    if not consumer then return out end
    r = {}
  end
  for _, e in ipairs(r) do out[e[1]] = {e[2], tonumber(e[4])} end
  local reached = hi
  if #r >= limit then reached = r[#r][1] end
  for _, id in ipairs(ids) do
    if not out[id] and (consumer or id_cmp(id, reached) > 0) then
      local owner, count = pending(k, id)
      if owner then out[id] = {owner, count} end
    end
  end
  return out
end

-- wake appends an entry to the group's wake-up stream (k.wake), kept at its last entry
-- (MAXLEN 1). A claim with nothing to do waits in XREAD BLOCK on the topic's stream and this
-- one, so that what a publish does not announce (a delivery parked by a nack, a release, a
-- reclaim, a requeue or a cleanup) wakes it at once, and its claim learns when a retry is
-- due. One XADD per call, not per delivery; without it (out of memory) the claim's next probe
-- finds the retry instead.
local function wake(k)
  redis.pcall('XADD', k.wake, 'MAXLEN', 1, '*', 'w', 1)
end

-- bury moves items (pending in the group, held by a consumer, not parked), each {id,
-- attempts, reason}, to the group's dead-letter stream, atomically with their XACK: per item
-- a record of id, reason, attempts, dead-at, topic and group, followed by the entry's own
-- fields (none if the entry was trimmed away); per batch the dead_index, dead_order and
-- XACK writes. k.dead_refs counts, per ID, the groups that keep it as a dead letter, so that
-- delete-on-ack keeps the entry for a requeue. Callers drop the ids from pending_at.
local function bury(k, items, now)
  if #items == 0 then return end
  local index, order, ids = {}, {}, {}
  for _, it in ipairs(items) do
    local id = it[1]
    local rec = {'_relq_id', id, '_relq_reason', it[3], '_relq_attempts', it[2],
      '_relq_dead_at', now, '_relq_topic', k.topic, '_relq_group', k.group}
    local e = redis.call('XRANGE', k.stream, id, id)
    if e[1] then
      for _, v in ipairs(e[1][2]) do rec[#rec + 1] = v end
    end
    local dl = redis.call('XADD', k.dead, '*', unpack(rec))
    redis.call('HINCRBY', k.dead_refs, id, 1)
    index[#index + 1] = id
    index[#index + 1] = dl
    order[#order + 1] = 0
    order[#order + 1] = pad(dl)
    ids[#ids + 1] = id
  end
  call_chunked('HSET', k.dead_index, index, 2)
  call_chunked('ZADD', k.dead_order, order, 2)
  call_ids('XACK', k.stream, {k.group}, ids)
end

-- bury_missing dead-letters ids whose entry is gone from the stream (deleted by hand, or
-- trimmed) while the group still owed them, with the reason "body missing" and attempts, and
-- counts them: nothing is left to deliver, and they must not vanish unseen.
local function bury_missing(k, ids, attempts)
  if #ids == 0 then return end
  local items = {}
  for i, id in ipairs(ids) do items[i] = {id, attempts, 'body missing'} end
  bury(k, items, now_ms())
  redis.call('HINCRBY', k.counters, 'dead_lettered', #ids)
end

-- park gives ids (pending in the group) to the parking consumer and schedules each in the
-- retry ZSET, ids[i] at scores[i] (ms): one XCLAIM ... JUSTID and one ZADD per 500. XCLAIM
-- keeps the delivery counts, unless count is given (RETRYCOUNT). An entry no longer in the
-- stream (deleted by hand, or trimmed) while the group still owed it has nothing left to
-- deliver: it is dead-lettered with the reason "body missing" (counted), not dropped unseen
-- (Redis 7 drops it from the PEL at the XCLAIM). Callers drop the ids from pending_at.
-- Returns how many were parked.
local function park(k, ids, scores, count)
  if #ids == 0 then return 0 end
  local tail = {'JUSTID'}
  if count then tail = {'RETRYCOUNT', count, 'JUSTID'} end
  local claimed = call_ids('XCLAIM', k.stream, {k.group, k.parked, 0}, ids, tail)
  local got = {}
  for _, id in ipairs(claimed) do got[id] = true end
  local z, gone = {}, {}
  for i, id in ipairs(ids) do
    if got[id] then
      z[#z + 1] = scores[i]
      z[#z + 1] = pad(id)
    else
      gone[#gone + 1] = id
    end
  end
  if #z > 0 then call_chunked('ZADD', k.retry, z, 2) end
  bury_missing(k, gone, count or 0)
  return #z / 2
end

-- drop_refs drops one dead-letter reference (k.dead_refs) to each of ids.
local function drop_refs(k, ids)
  for _, id in ipairs(ids) do
    if redis.call('HINCRBY', k.dead_refs, id, -1) <= 0 then
      redis.call('HDEL', k.dead_refs, id)
    end
  end
end

-- forget removes dead letters, each {id, dead-letter entry id}, from the group's dead-letter
-- stream and its dead_index and dead_order, and drops the group's dead-letter reference to
-- each id (k.dead_refs).
local function forget(k, dls)
  if #dls == 0 then return end
  local ids, entries, members = {}, {}, {}
  for _, d in ipairs(dls) do
    ids[#ids + 1] = d[1]
    entries[#entries + 1] = d[2]
    members[#members + 1] = pad(d[2])
  end
  drop_refs(k, ids)
  call_ids('XDEL', k.dead, {}, entries)
  call_ids('HDEL', k.dead_index, {}, ids)
  call_ids('ZREM', k.dead_order, {}, members)
end

-- release_dead deletes up to count of the oldest dead letters of the dead-letter stream key
-- (a deleted group's) and drops their references; it returns their entry IDs.
local function release_dead(k, key, count)
  local ids, entries = {}, {}
  for _, e in ipairs(redis.call('XRANGE', key, '-', '+', 'COUNT', count)) do
    entries[#entries + 1] = e[1]
    ids[#ids + 1] = e[2][2]
  end
  drop_refs(k, ids)
  call_ids('XDEL', key, {}, entries)
  return ids
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

-- find_group returns the group k.group among the stream's groups ({name, last}), or nil,
-- and all of them.
local function find_group(k)
  local groups = groups_of(k)
  for _, g in ipairs(groups) do
    if g.name == k.group then return g, groups end
  end
  return nil, groups
end

-- backlog_size counts the entries after where the backlog starts (meta backlog_from; the
-- stream's start if none): what the topic's first group takes. Entries up to backlog_from
-- were published while the topic had groups and wait for their trim (release.lua), which
-- leaves none once done; up to 1,000 of them are counted out, so the size is exact until
-- then too.
-- Returns the size and backlog_from.
local function backlog_size(k)
  local n = redis.call('XLEN', k.stream)
  local from = redis.call('HGET', k.meta, 'backlog_from')
  if not from or n == 0 then return n, from end
  return n - #redis.call('XRANGE', k.stream, '-', from, 'COUNT', 1000), from
end

-- create_group creates k.group at start ('0': every retained entry; '$': new ones only; an
-- ID: the entries after it), with the stream if missing, and records the topic's publish
-- counter (created if missing: it marks the topic, see topics.go) less replay, the entries the
-- group can read already, as the group's base, so that its "published" counter counts what
-- was routed to it. entries_read, when given, tells Redis 7 how many entries come before
-- start, so that it knows the group's lag (6.2 has no such option: created without).
-- A tombstone of the name (an earlier group an operator deleted) goes: it is about that group.
-- It goes after the XGROUP CREATE: a ZREM first would be the script's first write, after which
-- Redis no longer refuses a write for want of memory, and a new group on a full Redis must be
-- refused (ErrRedisFull).
local function create_group(k, start, replay, entries_read)
  local r
  if entries_read then
    r = redis.pcall('XGROUP', 'CREATE', k.stream, k.group, start, 'MKSTREAM', 'ENTRIESREAD', entries_read)
  end
  if not r or (type(r) == 'table' and r.err and not string.find(r.err, 'BUSYGROUP', 1, true)) then
    r = redis.pcall('XGROUP', 'CREATE', k.stream, k.group, start, 'MKSTREAM')
  end
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'BUSYGROUP', 1, true) then return 0 end
    error(r)
  end
  if k.tombs then redis.call('ZREM', k.tombs, k.group) end
  local base = tonumber(redis.call('INCRBY', k.published, 0))
  redis.call('HSET', k.counters, 'published_base', base - replay)
  return 1
end

-- register creates k.group unless the stream has it. The topic's first group (the stream has
-- none) takes the backlog: it starts where the backlog starts, whatever from_oldest says.
-- Any other group starts at the oldest retained entry (from_oldest) or with the next one.
-- Returns 1 when it created the group, 0 when it existed, and the stream's groups before.
local function register(k, from_oldest)
  local me, groups = find_group(k)
  if me then return 0, groups end
  if #groups > 0 then
    if from_oldest then
      create_group(k, '0', redis.call('XLEN', k.stream))
    else
      create_group(k, '$', 0)
    end
    return 1, groups
  end
  local size, from = backlog_size(k)
  local entries_read
  if size > 0 and size == redis.call('XLEN', k.stream) then
    -- The stream holds the backlog only: the entries before it are all those added but it.
    local info = redis.pcall('XINFO', 'STREAM', k.stream)
    if type(info) == 'table' and not info.err then
      for i = 1, #info, 2 do
        if info[i] == 'entries-added' then entries_read = tonumber(info[i + 1]) - size end
      end
    end
  end
  create_group(k, from or '0', size, entries_read)
  return 1, groups
end

-- add_member makes consumer a member of the ephemeral group k.group (registered) until now +
-- ttl ms: the group's expiry in the ephemeral ZSET is its latest membership deadline. groups
-- are the stream's groups besides it (find_group's second value). While every group of the
-- topic is ephemeral, the topic's keys expire one ttl after the latest expiry of its groups and
-- the group's own keys one ttl after its own, so a topic whose processes all died leaves no
-- key; otherwise the group's keys live for good.
local function add_member(k, groups, consumer, ttl, now)
  redis.call('ZADD', k.members, now + ttl, consumer)
  local expiry = redis.call('ZRANGE', k.members, -1, -1, 'WITHSCORES')[2]
  redis.call('ZADD', k.ephemeral, expiry, k.group)
  local names = {}
  for i, g in ipairs(groups) do names[i] = g.name end
  local all = true
  if #names > 0 then
    for _, s in ipairs(call_ids('ZMSCORE', k.ephemeral, {}, names)) do
      if not s then all = false end
    end
  end
  local own = {k.retry, k.leases, k.pending, k.counters, k.wake, k.reclaim_from, k.members, k.marks,
    k.dead, k.dead_index, k.dead_order, k.holders, k.quiet}
  if all then
    -- One TTL of slack past the deadlines, as the engine gives: a survivor's publish or Reclaim
    -- deletes a dead group, and releases the dead-letter references it held, before its keys
    -- expire by themselves.
    local last = redis.call('ZRANGE', k.ephemeral, -1, -1, 'WITHSCORES')[2] + ttl
    for _, key in ipairs({k.stream, k.published, k.delayed, k.dead_refs, k.meta, k.paused, k.ephemeral, k.deleting}) do
      redis.call('PEXPIREAT', key, last)
    end
    for _, key in ipairs(own) do redis.call('PEXPIREAT', key, expiry + ttl) end
  else
    for _, key in ipairs(own) do redis.call('PERSIST', key) end
  end
end

-- last_id returns the stream's last generated ID (XINFO STREAM), nil without a stream: every
-- entry the stream ever held is at or before it, deleted ones included.
local function last_id(k)
  local r = redis.pcall('XINFO', 'STREAM', k.stream)
  if type(r) ~= 'table' or r.err then return nil end
  for i = 1, #r, 2 do
    if r[i] == 'last-generated-id' then return r[i + 1] end
  end
  return nil
end

-- settle_topic runs when the topic has no group left. What it holds after backlog_from is
-- its backlog; with none, and no deleted group's dead letters still being released, the
-- topic goes: every key of it is unlinked. A backlog expires ttl ms from now (a publish sets
-- it again). Returns 1 when entries published while it had groups wait for their trim, else 0,
-- and true when the topic went.
local function settle_topic(k, ttl)
  local from = redis.call('HGET', k.meta, 'backlog_from')
  local after = from and ('(' .. from) or '-'
  if not redis.call('XRANGE', k.stream, after, '+', 'COUNT', 1)[1] then
    if redis.call('SCARD', k.deleting) == 0 then
      redis.call('UNLINK', k.stream, k.published, k.delayed, k.dead_refs, k.meta, k.paused, k.ephemeral, k.deleting)
      return 0, true
    end
  else
    for _, key in ipairs({k.stream, k.published, k.delayed, k.meta}) do redis.call('PEXPIRE', key, ttl) end
  end
  if from and redis.call('XRANGE', k.stream, '-', from, 'COUNT', 1)[1] then return 1, false end
  return 0, false
end

-- unneeded returns those of ids that no group needs any more (delete-on-ack): every group of
-- groups has read them, none holds them pending (parked retries included), and no group keeps
-- them as a dead letter. Per batch: one HMGET when any dead letter is referenced, and one
-- pel_of per group.
local function unneeded(k, ids, groups)
  local left = ids
  if redis.call('EXISTS', k.dead_refs) == 1 then
    local refs = call_ids('HMGET', k.dead_refs, {}, ids)
    left = {}
    for i, id in ipairs(ids) do
      if not refs[i] then left[#left + 1] = id end
    end
  end
  for _, g in ipairs(groups) do
    local read = {}
    for _, id in ipairs(left) do
      if id_cmp(id, g.last) <= 0 then read[#read + 1] = id end
    end
    local pel = pel_of({stream = k.stream, group = g.name}, read)
    left = {}
    for _, id in ipairs(read) do
      if not pel[id] then left[#left + 1] = id end
    end
  end
  return left
end

-- xdel deletes ids from the stream, one XDEL per 500.
local function xdel(k, ids)
  call_ids('XDEL', k.stream, {}, ids)
end

-- Delayed publishes keep their due time in the topic's delayed ZSET until long after it
-- passed, so that a group reading them late still orders them by due time; then they go.
local delayed_horizon_ms = 3600000

-- prune_delayed drops due times past the horizon and returns how many delayed entries are
-- left: 0 means no entry needs a ZSCORE.
local function prune_delayed(k, now)
  local n = redis.call('ZCARD', k.delayed)
  if n == 0 then return 0 end
  return n - redis.call('ZREMRANGEBYSCORE', k.delayed, '-inf', '(' .. (now - delayed_horizon_ms))
end
