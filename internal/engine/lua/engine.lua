-- engine.lua: the group state that the list and zset backends share, prepended to every script
-- of theirs after common.lua and before the backend's store.lua. It declares no keys: keys_at
-- reads the names the script received in KEYS, in the order internal/engine's keys.go gives.
--
-- A delivery in flight (pending) has one record, written once per batch in each structure:
--   pending    ZSET id -> lease deadline (ms): what Reclaim and the next-expiry hint read
--   pending_at ZSET id -> pending since (ms): what Stats' oldest pending age reads
--   holders    HASH id -> "consumer:attempt:since:extra": the fencing token (consumer and
--              attempt), and extra, the store's note to put the message back where it was
--              (zset: due time and priority). An orphan (list) has consumer "".
-- A message back in ready after a delivery keeps its attempts in retries (HASH id -> attempts,
-- or ACKED once a late ack completed it while it waited: see ack.lua);
-- a dead letter keeps them in dead_info (HASH id -> "attempts|extra|reason") beside dead (ZSET
-- id -> dead at, ms).

local ENGINE_KEYS = 8

-- TOPIC_KEYS is how many KEYS the topic's take first: meta, bodies, refs, registry, the
-- registry of the layout before (legacy), ephemeral (ZSET ephemeral group -> deadline, ms),
-- trash (ZSET id -> when a deleted group's keys moved to trash:<id>:*, until drained) and
-- tombs (ZSET group -> when its tombstone expires, ms: groups an operator deleted; see
-- common.lua).
local TOPIC_KEYS = 8

-- keys_at returns the key table of the group whose keys start at KEYS[at], after the topic's;
-- k.group lists the group's own keys (engine's, then the store's).
local function keys_at(at)
  local k = {meta = KEYS[1], bodies = KEYS[2], refs = KEYS[3], registry = KEYS[4], legacy = KEYS[5],
    ephemeral = KEYS[6], trash = KEYS[7], tombs = KEYS[8],
    pending = KEYS[at], since = KEYS[at + 1], holders = KEYS[at + 2], retries = KEYS[at + 3],
    dead = KEYS[at + 4], info = KEYS[at + 5], counters = KEYS[at + 6], members = KEYS[at + 7], group = {}}
  for i, name in ipairs(STORE_KEY_NAMES) do k[name] = KEYS[at + ENGINE_KEYS + i - 1] end
  for i = at, at + ENGINE_KEYS + #STORE_KEY_NAMES - 1 do k.group[#k.group + 1] = KEYS[i] end
  return k
end

-- topic_keys lists the topic's keys (KEYS[1..TOPIC_KEYS]) but legacy, which this layout never
-- writes, and tombs, which outlives the topic by design: to delete or expire a topic's keys.
local function topic_keys()
  local out = {}
  for i = 1, TOPIC_KEYS do
    if i ~= 5 and i ~= 8 then out[#out + 1] = KEYS[i] end
  end
  return out
end

-- store_keys_at returns the key table of a group's store keys alone, starting at KEYS[at]
-- (publish.lua passes only those per group), with the topic's meta; k.group lists them.
local function store_keys_at(at)
  local k = {meta = KEYS[1], group = {}}
  for i, name in ipairs(STORE_KEY_NAMES) do
    k[name] = KEYS[at + i - 1]
    k.group[i] = KEYS[at + i - 1]
  end
  return k
end

local function ms(n) return string.format('%d', n) end

-- record is a holders value; parse reads one back (nil for a missing or foreign value).
local function record(consumer, attempt, since, extra)
  return consumer .. ':' .. attempt .. ':' .. ms(since) .. ':' .. extra
end

local function parse(v)
  if not v then return nil end
  local c, a, s, x = string.match(v, '^([^:]*):(%d+):(%d+):(.*)$')
  if not c then return nil end
  return c, tonumber(a), tonumber(s), x
end

-- read_records returns the parsed holders records of ids, in order, each {consumer, attempt,
-- since, extra} or false: one HMGET.
local function read_records(k, ids)
  local out = {}
  if #ids == 0 then return out end
  local vs = redis.call('HMGET', k.holders, unpack(ids))
  for i = 1, #ids do
    local c, a, s, x = parse(vs[i])
    out[i] = c and {consumer = c, attempt = a, since = s, extra = x} or false
  end
  return out
end

-- unpend removes ids from pending: one command per structure.
local function unpend(k, ids)
  if #ids == 0 then return end
  call_chunked('ZREM', k.pending, ids, 1)
  call_chunked('ZREM', k.since, ids, 1)
  call_chunked('HDEL', k.holders, ids, 1)
end

-- pend records items ({id, consumer, attempt, since, extra}) as pending until deadline.
local function pend(k, items, deadline)
  if #items == 0 then return end
  local z, s, h = {}, {}, {}
  for _, it in ipairs(items) do
    z[#z + 1] = deadline
    z[#z + 1] = it.id
    s[#s + 1] = it.since
    s[#s + 1] = it.id
    h[#h + 1] = it.id
    h[#h + 1] = record(it.consumer, it.attempt, it.since, it.extra)
  end
  call_chunked('ZADD', k.pending, z, 2)
  call_chunked('ZADD', k.since, s, 2)
  call_chunked('HSET', k.holders, h, 2)
end

-- unref drops one group's reference to each of ids and deletes a body with its last one. A
-- missing count means one holder: publish writes refs only for fan-out.
local function unref(k, ids)
  if #ids == 0 then return end
  local last = ids
  if redis.call('EXISTS', k.refs) == 1 then
    last = {}
    local counts = redis.call('HMGET', k.refs, unpack(ids))
    local fewer, gone = {}, {}
    for i, id in ipairs(ids) do
      local n = tonumber(counts[i] or '1')
      if n > 1 then
        fewer[#fewer + 1] = id
        fewer[#fewer + 1] = n - 1
      else
        last[#last + 1] = id
        if counts[i] then gone[#gone + 1] = id end
      end
    end
    if #fewer > 0 then call_chunked('HSET', k.refs, fewer, 2) end
    if #gone > 0 then call_chunked('HDEL', k.refs, gone, 1) end
  end
  if #last > 0 then call_chunked('HDEL', k.bodies, last, 1) end
end

-- ACKED is the retries value of a message acked while it waited in ready or delayed (a late
-- ack after its lease was reclaimed): the next claim that takes it drops it undelivered.
local ACKED = 'acked'

-- read_tries returns the retries values of ids, in order (nil: none); most messages are
-- first deliveries, so without a retries HASH there is nothing to read.
local function read_tries(k, ids)
  if redis.call('EXISTS', k.retries) == 0 then return {} end
  return redis.call('HMGET', k.retries, unpack(ids))
end

-- lease makes the taken ids pending for consumer and appends id, attempt, body to out;
-- extras[i] is the store's note for ids[i] (nil: none). The attempt is one more than retries
-- holds. An id marked ACKED is dropped (its work is done). An id without a body (deleted by
-- hand, lost, or foreign data) is leased like any other and returned with a nil body, so that
-- the subscriber dead-letters it with the reason "body missing" rather than it vanishing.
-- It builds the arguments of each write directly, one string per record, since this runs for
-- every message claimed. Returns how many were leased.
local function lease(k, ids, extras, consumer, now, deadline, out)
  local n = #ids
  if n == 0 then return 0 end
  local bodies = redis.call('HMGET', k.bodies, unpack(ids))
  local tries = read_tries(k, ids)
  local z, s, h, retried, done = {}, {}, {}, {}, {}
  local head, tail = consumer .. ':', ':' .. ms(now) .. ':'
  local got, o = 0, #out
  for i = 1, n do
    local id, tried = ids[i], tries[i]
    if tried then retried[#retried + 1] = id end
    if tried == ACKED then
      done[#done + 1] = id
    else
      local attempt = (tonumber(tried) or 0) + 1
      local j = 2 * got
      z[j + 1], z[j + 2] = deadline, id
      s[j + 1], s[j + 2] = now, id
      h[j + 1], h[j + 2] = id, head .. attempt .. tail .. (extras and extras[i] or '')
      out[o + 1], out[o + 2], out[o + 3] = id, attempt, bodies[i] or false
      got, o = got + 1, o + 3
    end
  end
  if #retried > 0 then call_chunked('HDEL', k.retries, retried, 1) end
  if got > 0 then
    call_chunked('ZADD', k.pending, z, 2)
    call_chunked('ZADD', k.since, s, 2)
    call_chunked('HSET', k.holders, h, 2)
  end
  if #done > 0 then unref(k, done) end
  return got
end

-- holds reports whether a holders value v is consumer's record of attempt (a string): the
-- fencing check, without parsing the rest of the record.
local function holds(v, consumer, attempt)
  local prefix = consumer .. ':' .. attempt .. ':'
  return string.sub(v, 1, #prefix) == prefix
end

-- keep_attempts records in retries how many deliveries each item ({id, attempt}) going back to
-- ready has had, where it had any.
local function keep_attempts(k, items)
  local h = {}
  for _, it in ipairs(items) do
    if it.attempt > 0 then
      h[#h + 1] = it.id
      h[#h + 1] = it.attempt
    end
  end
  if #h > 0 then call_chunked('HSET', k.retries, h, 2) end
end

-- bury moves items ({id, attempt, extra, reason}), already out of ready and pending, to the
-- dead-letter store.
local function bury(k, items, now)
  if #items == 0 then return end
  local z, h = {}, {}
  for _, it in ipairs(items) do
    z[#z + 1] = now
    z[#z + 1] = it.id
    h[#h + 1] = it.id
    h[#h + 1] = it.attempt .. '|' .. it.extra .. '|' .. it.reason
  end
  call_chunked('ZADD', k.dead, z, 2)
  call_chunked('HSET', k.info, h, 2)
end

-- parse_info reads a dead_info value: attempts, extra, reason.
local function parse_info(v)
  if not v then return 0, '', '' end
  local a, x, r = string.match(v, '^(%d+)|([^|]*)|(.*)$')
  if not a then return 0, '', v end
  return tonumber(a), x, r
end

-- next_expiry is the ms until the group's earliest lease expires (at least 1), or -1.
local function next_expiry(k, now)
  local first = redis.call('ZRANGE', k.pending, 0, 0, 'WITHSCORES')
  if not first[2] then return -1 end
  return math.max(1, tonumber(first[2]) - now)
end

-- count adds n to a counter, when n is not 0.
local function count(k, field, n)
  if n ~= 0 then redis.call('HINCRBY', k.counters, field, n) end
end

-- dedupe returns ids without repeats, so one call never handles an id twice.
local function dedupe(ids)
  local seen, out = {}, {}
  for _, id in ipairs(ids) do
    if not seen[id] then
      seen[id] = true
      out[#out + 1] = id
    end
  end
  return out
end

-- chosen_dead returns the dead letters that a requeue or a purge names: the ids of ARGV[2..]
-- that are dead letters of the group (each once), or, with none given, the ARGV[1] oldest.
local function chosen_dead(k)
  if #ARGV == 1 then
    return redis.call('ZRANGE', k.dead, 0, tonumber(ARGV[1]) - 1)
  end
  local given = {}
  for i = 2, #ARGV do given[#given + 1] = ARGV[i] end
  given = dedupe(given)
  local scores = redis.call('ZMSCORE', k.dead, unpack(given))
  local ids = {}
  for i, id in ipairs(given) do
    if scores[i] then ids[#ids + 1] = id end
  end
  return ids
end

-- first_seq is the ID counter of a topic that has none (new, or created again after its keys
-- were deleted): the Redis clock in microseconds, so that the IDs of a topic created again
-- follow those of its earlier life, as long as it issued fewer than one ID a microsecond on
-- average (a million a second). A delivery of the earlier topic that its holder acks late can
-- then never complete a message of the new one. Exact in Lua's doubles (below 2^53) until
-- the year 2255, and 16 digits, as zset's members expect.
local function first_seq()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- topic_seq is the topic's ID counter from meta's seq field v, or first_seq when it has none.
local function topic_seq(v)
  if v then return tonumber(v) end
  return first_seq()
end

-- new_version is a registry version no earlier one can equal: the Redis clock in µs. A
-- counter would hand out the same number again after a failover lost its last bump, for
-- another set of groups, and publishers holding that number would route by the lost set.
local function new_version()
  local t = redis.call('TIME')
  return t[1] .. string.format('%06d', tonumber(t[2]))
end

-- first_due is the score (a due time) of the earliest member of the store's ZSET key (list:
-- delayed, zset: ready), or nil. It is read once per script and kept in k; a store that takes
-- from or adds to key clears k.first_due.
local function first_due(k, key)
  if k.first_due == nil then
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    k.first_due = first[2] and tonumber(first[2]) or false
  end
  return k.first_due or nil
end

-- layout_error is the error reply for data in storage layout found, which this code cannot read.
local function layout_error(found)
  return redis.error_reply('RELQLAYOUT ' .. found .. ' ' .. LAYOUT)
end

-- check_layout raises layout_error when meta's layout field names a layout other than this one.
local function check_layout(found)
  if found and found ~= LAYOUT then error(layout_error(found)) end
end

-- The registry value of a group is "seq" or "seq:flags": seq is the topic's seq when the group
-- registered (Stats' Published counts from it), flags hold p (paused) and e (ephemeral).
-- reg_parse reads one (nil for none): seq, paused, ephemeral.
local function reg_parse(v)
  if not v then return nil end
  local seq, flags = string.match(v, '^(%-?%d+):?(%a*)$')
  if not seq then return 0, false, false end
  return tonumber(seq), string.find(flags, 'p', 1, true) ~= nil, string.find(flags, 'e', 1, true) ~= nil
end

-- reg_value writes a registry value.
local function reg_value(seq, paused, ephemeral)
  local flags = (paused and 'p' or '') .. (ephemeral and 'e' or '')
  if flags == '' then return ms(seq) end
  return ms(seq) .. ':' .. flags
end

-- gone is the error reply for a call on a group that is not registered: RELQGONE when an
-- operator deleted it (a tombstone: Go's backend.ErrGroupDeleted), RELQLOST when it vanished
-- without one (backend.ErrGroupLost), which a running subscription answers by registering it
-- again.
local function gone(k, group)
  if tombstoned(k.tombs, group, now_ms()) then return redis.error_reply('RELQGONE group was deleted') end
  return redis.error_reply('RELQLOST group is not registered')
end

-- PAUSED is the wait a claim reports for a paused group: it claimed nothing, and the caller
-- sleeps its Block instead of waiting for a wake-up.
local PAUSED = -2

-- keep_expiry gives the group's keys the topic's expiry (meta's expire field), which is set
-- while every group of the topic is ephemeral (join.lua), so that keys a script created since
-- the last Join expire with the rest when every member's process died.
local function keep_expiry(k)
  local at = redis.call('HGET', k.meta, 'expire')
  if not at then return end
  for _, key in ipairs(k.group) do redis.call('PEXPIREAT', key, at) end
end

-- unlink deletes keys (UNLINK frees large values off the main thread).
local function unlink(keys)
  for i = 1, #keys, 512 do
    redis.call('UNLINK', unpack(keys, i, math.min(i + 511, #keys)))
  end
end

-- Admin: listing and finding messages (messages.lua, message.lua, deletemessage.lua,
-- runmessage.lua). Each store adds its own part at the end of its store.lua.

-- ADMIN_CHUNK is how many entries a listing or a search reads per command.
local ADMIN_CHUNK = 500

-- admin_error is the error reply of an Admin verb: "RELQ<what> admin", translated in Go. A
-- reply without a space would get Redis's ERR code in front of it.
local function admin_error(what)
  return redis.error_reply('RELQ' .. what .. ' admin')
end

-- admin_zpage appends to items the members of key from rank from to rank to (excluded), in
-- ZSET order, until count are listed or limit were looked at. conv(member, score) makes an
-- item ({id, ...}) of a member, or nil for a member relq did not write; with hide, ids marked
-- ACKED are left out and each item gets its attempts from retries. Returns the score and
-- member of the last one looked at, or nil when the range is exhausted.
local function admin_zpage(k, key, from, to, count, limit, conv, hide, items)
  local seen, last_score, last_member = 0, nil, nil
  while from < to and #items < count and seen < limit do
    local n = math.min(to - from, count - #items, ADMIN_CHUNK)
    local got = redis.call('ZRANGE', key, from, from + n - 1, 'WITHSCORES')
    if #got == 0 then return nil end
    local chunk = {}
    for i = 1, #got, 2 do
      local it = conv(got[i], tonumber(got[i + 1]))
      if it then chunk[#chunk + 1] = it end
      last_member, last_score = got[i], got[i + 1]
      seen = seen + 1
    end
    from = from + #got / 2
    local tries = {}
    if hide and #chunk > 0 then
      local ids = {}
      for i, it in ipairs(chunk) do ids[i] = it.id end
      tries = read_tries(k, ids)
    end
    for i, it in ipairs(chunk) do
      if tries[i] ~= ACKED then
        it.attempts = it.attempts or tonumber(tries[i]) or 0
        items[#items + 1] = it
      end
    end
  end
  if from >= to then return nil end
  return last_score, last_member
end

-- admin_start is the rank where a listing of key resumes after the cursor (score, member), or
-- from when there is none; never before from.
local function admin_start(key, score, member, from)
  if member == '' then return from end
  return math.max(from, zset_after(key, score, member))
end

-- admin_find returns where the group holds id, as an item {id, state, ...}; nil when it does
-- not hold it; or 'deep' when the store could not be searched to its end and may hold it
-- deeper. Pending and dead are found by id; the store's own states by store_find(k, id, now,
-- depth), which returns the item, or nil and whether its search was exhaustive.
local function admin_find(k, id, now, depth, store_find)
  local s = redis.call('ZSCORE', k.pending, id)
  if s then return {id = id, state = 'pending', deadline = tonumber(s)} end
  s = redis.call('ZSCORE', k.dead, id)
  if s then return {id = id, state = 'dead', dead_at = tonumber(s)} end
  local tried = redis.call('HGET', k.retries, id)
  if tried == ACKED then return nil end
  local it, exhaustive = store_find(k, id, now, depth)
  if it then
    it.id = id
    it.attempts = tonumber(tried) or 0
    return it
  end
  if exhaustive then return nil end
  -- Back in the store after a delivery, or its body still kept: it may be deeper.
  if tried or redis.call('HEXISTS', k.bodies, id) == 1 then return 'deep' end
  return nil
end

-- admin_out appends items (one state's) to out, 11 values each: id, state, attempts,
-- priority, due, consumer, lease deadline, since, reason, dead at (ms, 0: none), body or
-- false. prio_of(extra) is the store's priority of a pending or dead message's extra.
local function admin_out(k, items, prio_of, out)
  if #items == 0 then return end
  local ids = {}
  for i, it in ipairs(items) do ids[i] = it.id end
  local bodies = redis.call('HMGET', k.bodies, unpack(ids))
  local recs, infos = {}, {}
  if items[1].state == 'pending' then recs = redis.call('HMGET', k.holders, unpack(ids)) end
  if items[1].state == 'dead' then infos = redis.call('HMGET', k.info, unpack(ids)) end
  for i, it in ipairs(items) do
    local attempts, prio, consumer, since, reason = it.attempts or 0, it.prio or 0, '', 0, ''
    if it.state == 'pending' then
      local c, a, sn, x = parse(recs[i])
      if c then consumer, attempts, since, prio = c, a, sn, prio_of(x) end
    elseif it.state == 'dead' then
      local x
      attempts, x, reason = parse_info(infos[i])
      prio = prio_of(x)
    end
    local o = #out
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = it.id, it.state, attempts, prio
    out[o + 5], out[o + 6], out[o + 7], out[o + 8] = ms(it.due or 0), consumer, ms(it.deadline or 0), ms(since)
    out[o + 9], out[o + 10], out[o + 11] = reason, ms(it.dead_at or 0), bodies[i] or false
  end
end

-- admin_drop deletes message id for good: at once from the store ZSET key where it is member
-- (its body with its last group), or, with no key (a LIST, or a queue member a claim may be
-- about to pop), by marking it ACKED, so that the claim that reaches it drops it and frees its
-- body.
local function admin_drop(k, key, member, id)
  if key then
    redis.call('ZREM', key, member)
    redis.call('HDEL', k.retries, id)
    unref(k, {id})
  else
    redis.call('HSET', k.retries, id, ACKED)
  end
end
