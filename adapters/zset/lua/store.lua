-- store.lua: the zset backend's ready store, for internal/engine's scripts. Two ZSETs and a
-- LIST per group; PRIORITY_MIN, PRIORITY_MAX, RANK_DIGITS, DUE_DIGITS and WAKE_TTL_MS are set
-- from Go (backend.go):
--
--   k.queue  due messages in the order they are claimed: score the rank PRIORITY_MAX -
--            priority (higher priority, lower rank), member "<due><n><id>": the due time
--            zero-padded to DUE_DIGITS, a letter n giving the delivery ID's number of digits
--            (A for 1, B for 2, ...) and the ID, so that members of one rank sort by due time,
--            then by ID as a number (Redis orders equal scores bytewise), in as few bytes as
--            the ready member. A claim pops its head: O(batch · log N), whatever waits behind.
--   k.ready  messages by due time: score the due time, member "<rank>:<id>" (zero-padded to
--            RANK_DIGITS and 16 digits). It holds the delayed messages (publish with a delay,
--            nack backoff) until a claim finds them due and moves them to queue, at most the
--            script's batch limit per claim, earliest due first (promote). Earlier builds
--            kept every message here, in this form: a claim moves those to queue in turn.
--   k.wake   the LIST of wake-up tokens that blocked claims wait on.
--
-- A pending message's extra (engine.lua) is "due:priority": the due time it had when claimed
-- and its priority.

local MEMBER_FORMAT = '%0' .. RANK_DIGITS .. 'd:%016d'
local MEMBER_LEN = RANK_DIGITS + 17
local DUE_FORMAT = '%0' .. DUE_DIGITS .. 'd'

-- member is the ready member of id with priority p. Lua numbers are exact up to 2^53, below
-- 10^16.
local function member(id, p)
  return string.format(MEMBER_FORMAT, PRIORITY_MAX - p, tonumber(id))
end

-- id_of is the delivery ID and priority of a ready member, or nil for a member relq did not
-- write. Members are fixed-width, so it cuts rather than matches a pattern.
local function id_of(m)
  if #m ~= MEMBER_LEN or string.byte(m, RANK_DIGITS + 1) ~= 58 or not string.find(m, '^%d+:%d+$') then
    return nil -- 58 is ':'
  end
  return ms(tonumber(string.sub(m, RANK_DIGITS + 2))), PRIORITY_MAX - tonumber(string.sub(m, 1, RANK_DIGITS))
end

-- queued is the queue member of id, due at due.
local function queued(due, id)
  id = ms(tonumber(id))
  return string.format(DUE_FORMAT, due) .. string.char(64 + #id) .. id
end

-- unqueue is the delivery ID and due time of a queue member, or nil for a member relq did not
-- write.
local function unqueue(m)
  local n = string.byte(m, DUE_DIGITS + 1)
  if not n or #m ~= DUE_DIGITS + n - 63 or not string.find(m, '^%d+%u%d+$') then
    return nil
  end
  return string.sub(m, DUE_DIGITS + 2), tonumber(string.sub(m, 1, DUE_DIGITS))
end

-- clamp brings a priority into [PRIORITY_MIN, PRIORITY_MAX].
local function clamp(p)
  return math.max(PRIORITY_MIN, math.min(PRIORITY_MAX, p))
end

-- wake pushes a wake-up token for the consumers blocked in BLPOP on key, unless one is waiting
-- already: one token wakes one consumer, which passes it on if more is due (store_claimed).
-- The token expires, so an unclaimed one does not outlive the moment it was meant for.
local function wake(key)
  if redis.call('LLEN', key) == 0 then
    redis.call('RPUSH', key, '1')
    redis.call('PEXPIRE', key, WAKE_TTL_MS)
  end
end

-- store_push adds a publish's messages ({id, delay, prio}): those due now to queue, delayed
-- ones to ready at now + delay; and wakes a blocked consumer when one is asleep: mark is the
-- group's wake mark in meta, the time until which a consumer said it sleeps (store_wait). A
-- delayed publish wakes one too, so that it learns the new earliest due time.
local function store_push(k, msgs, now, mark)
  local q, z = {}, {}
  for _, m in ipairs(msgs) do
    local p = clamp(m.prio)
    if m.delay > 0 then
      z[#z + 1] = now + m.delay
      z[#z + 1] = member(m.id, p)
    else
      q[#q + 1] = PRIORITY_MAX - p
      q[#q + 1] = queued(now, m.id)
    end
  end
  if #q > 0 then call_chunked('ZADD', k.queue, q, 2) end
  if #z > 0 then call_chunked('ZADD', k.ready, z, 2) end
  if mark == 'force' or (mark and tonumber(mark) >= now) then wake(k.wake) end
end

-- promote moves up to limit members of ready that are due at now to queue, earliest due first,
-- each with its due time and priority; members relq did not write are dropped. With nothing
-- due it costs one look at the earliest member.
-- It removes before it adds: on a full Redis (noeviction) a script may still add once it has
-- written, and a claim must keep working there.
local function promote(k, now, limit)
  local first = first_due(k, k.ready)
  if not first or first > now then return end
  k.first_due = nil
  local due = redis.call('ZRANGE', k.ready, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
  local gone, q = {}, {}
  for i = 1, #due, 2 do
    gone[#gone + 1] = due[i]
    local id, p = id_of(due[i])
    if id then
      q[#q + 1] = PRIORITY_MAX - p
      q[#q + 1] = queued(tonumber(due[i + 1]), id)
    end
  end
  call_chunked('ZREM', k.ready, gone, 1)
  if #q > 0 then call_chunked('ZADD', k.queue, q, 2) end
end

-- store_take moves what is due from ready to queue (at most limit), then pops up to n members
-- of queue: higher priority first, then earlier due time, then publish order. It returns their
-- ids and notes (due time and priority). A member relq did not write is dropped and counts
-- against n.
local function store_take(k, n, now, limit)
  promote(k, now, math.max(limit, n))
  local top = redis.call('ZPOPMIN', k.queue, n)
  k.taken = #top / 2
  local ids, extras = {}, {}
  for i = 1, #top, 2 do
    local id, due = unqueue(top[i])
    if id then
      ids[#ids + 1] = id
      extras[#ids] = ms(due) .. ':' .. ms(PRIORITY_MAX - tonumber(top[i + 1]))
    end
  end
  return ids, extras
end

-- store_claimed passes a wake-up on when a full batch was taken, more is due and a consumer
-- of the group may be asleep, so one wake-up drains a burst across several consumers. Busy
-- consumers, which mark nobody asleep, pay one HGET per full batch.
local function store_claimed(k, full, now, group)
  if not full then return end
  local mark = redis.call('HGET', k.meta, 'w:' .. group)
  if not mark or tonumber(mark) < now then return end
  local first = first_due(k, k.ready)
  if redis.call('EXISTS', k.queue) == 1 or (first and first <= now) then wake(k.wake) end
end

-- store_wait is the ms until the earliest message is due (0: now), or -1 when none is
-- scheduled. It marks the group asleep in meta until the caller's wait is over, so publishes
-- push a wake-up token while someone may be blocked and skip it otherwise. The claim's take
-- (ZPOPMIN) came first, so a full Redis takes the mark too; the pcall keeps the claim
-- answering should the write be refused all the same.
local function store_wait(k, now, group, block)
  if block > 0 then redis.pcall('HSET', k.meta, 'w:' .. group, now + block) end
  if (k.taken or 0) > 0 then return 0 end -- store_take dropped foreign members: look again
  local first = first_due(k, k.ready)
  if not first then return -1 end
  return math.max(0, first - now)
end

-- extra_of reads a pending message's extra: due time and priority.
local function extra_of(x)
  local due, p = string.match(x or '', '^(%d+):(-?%d+)$')
  return tonumber(due), clamp(tonumber(p) or 0)
end

-- store_back puts items back. A delayed retry waits in ready until its due time; the others go
-- to queue with their priority. A release, an immediate retry and a reclaimed lease keep their
-- place in line (the due time they had when claimed, never later than now), so that what comes
-- back is claimed before the messages published after it, as on list and streams (the order
-- per key of partitioned topics rests on it); a requeued dead letter is due now, behind what
-- of its priority is already due. A blocked consumer is woken.
local function store_back(k, items, now)
  if #items == 0 then return end
  local q, z = {}, {}
  for _, it in ipairs(items) do
    local due, p = extra_of(it.extra)
    if it.kind == 'delay' then
      z[#z + 1] = it.due
      z[#z + 1] = member(it.id, p)
    else
      local at = now
      if it.kind ~= 'requeue' and due then at = math.min(now, due) end
      q[#q + 1] = PRIORITY_MAX - p
      q[#q + 1] = queued(at, it.id)
    end
  end
  if #q > 0 then call_chunked('ZADD', k.queue, q, 2) end
  if #z > 0 then
    call_chunked('ZADD', k.ready, z, 2)
    k.first_due = nil
  end
  wake(k.wake)
end

-- store_next_due: -1; claims move due messages to queue, and a consumer wakes for the earliest
-- due time itself (store_wait).
local function store_next_due(_, _) return -1 end

-- store_upkeep: nothing to promote (claims do) and no orphans (a claim takes and leases in one
-- script).
local function store_upkeep(_, _, _, _) return 0, 0 end

-- store_size is how many messages the store holds: queue and ready. O(1).
local function store_size(k)
  return redis.call('ZCARD', k.queue) + redis.call('ZCARD', k.ready)
end

-- store_drop removes up to n messages, those a claim would take first (the head of queue),
-- then the earliest of ready, and returns their ids and how many members it removed, foreign
-- ones included (a backlog over its limit, a deleted group's keys being freed).
local function store_drop(k, n)
  local ids, removed = {}, 0
  local top = redis.call('ZPOPMIN', k.queue, n)
  for i = 1, #top, 2 do
    local id = unqueue(top[i])
    if id then ids[#ids + 1] = id end
  end
  removed = #top / 2
  if removed < n then
    local due = redis.call('ZPOPMIN', k.ready, n - removed)
    for i = 1, #due, 2 do
      local id = id_of(due[i])
      if id then ids[#ids + 1] = id end
    end
    removed = removed + #due / 2
  end
  return ids, removed
end

-- store_counts returns ready (queue, and the due members of ready), delayed (the others),
-- the due time of the oldest due message (nil: none), and 0 staged. Within one priority the
-- head of queue is the oldest, so the oldest is found by visiting the head of each priority
-- in queue, up to window priorities (O(window · log N)): exact with up to window priorities
-- in use, else the age is a lower bound.
local function store_counts(k, now, window)
  local first = first_due(k, k.ready)
  local since
  if first and first <= now then since = first end
  local head = redis.call('ZRANGE', k.queue, 0, 0, 'WITHSCORES')
  for _ = 1, window do
    if not head[1] then break end
    local _, due = unqueue(head[1])
    if due and (not since or due < since) then since = due end
    head = redis.call('ZRANGE', k.queue, '(' .. head[2], '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
  end
  return redis.call('ZCARD', k.queue) + redis.call('ZCOUNT', k.ready, '-inf', now),
    redis.call('ZCOUNT', k.ready, '(' .. now, '+inf'), since, 0
end

-- Admin: listing and finding messages

-- Ready is queue in claim order, then the members of ready that are due but not yet moved to
-- queue (Stats counts those as ready too), in due order: a claim moves them into queue by
-- priority. Delayed is the members of ready not yet due. A queue member cannot be found by id
-- (it starts with its due time); a ready member can once its priority is known.

-- ADMIN_PROBES bounds the priorities a search by id tries in ready before it looks through it.
local ADMIN_PROBES = 16

-- admin_prio is the priority of a pending or dead message's extra.
local function admin_prio(x)
  local _, p = extra_of(x)
  return p
end

local function store_first_phase(state)
  if state == 'ready' then return 'q' end
  return 'z'
end

-- admin_queued, admin_due and admin_later make listing items of queue and ready members.
local function admin_queued(m, rank)
  local id = unqueue(m)
  if id then return {id = id, state = 'ready', prio = PRIORITY_MAX - rank} end
end

local function admin_due(m)
  local id, p = id_of(m)
  if id then return {id = id, state = 'ready', prio = p} end
end

local function admin_later(m, due)
  local id, p = id_of(m)
  if id then return {id = id, state = 'delayed', prio = p, due = due} end
end

-- store_page appends one page of state ('ready' or 'delayed') to items, after the cursor
-- (phase, score, member; member '': from the start of the phase): phase q pages queue, r the
-- due members of ready, z the later ones. Returns the next cursor's phase, score and member
-- (phase nil: last page), or an error reply.
local function store_page(k, state, phase, score, member, count, limit, _, now, items)
  local due = redis.call('ZCOUNT', k.ready, '-inf', now)
  if state == 'delayed' then
    if phase ~= 'z' then return admin_error('BADCURSOR') end
    local from = admin_start(k.ready, score, member, due)
    local s, m = admin_zpage(k, k.ready, from, redis.call('ZCARD', k.ready), count, limit, admin_later, true, items)
    if s then return 'z', s, m end
    return nil
  end
  if phase == 'q' then
    local from = admin_start(k.queue, score, member, 0)
    local s, m = admin_zpage(k, k.queue, from, redis.call('ZCARD', k.queue), count, limit, admin_queued, true, items)
    if s then return 'q', s, m end
    if #items >= count then
      if due > 0 then return 'r', 0, '' end
      return nil
    end
    phase, member = 'r', ''
  end
  if phase ~= 'r' then return admin_error('BADCURSOR') end
  local from = admin_start(k.ready, score, member, 0)
  local s, m = admin_zpage(k, k.ready, from, due, count, limit, admin_due, true, items)
  if s then return 'r', s, m end
  return nil
end

-- store_find finds id in the store. In ready by its member, for the priority 0 and those of
-- the first ADMIN_PROBES priorities in queue (O(log N) each); else by looking through queue in
-- claim order and ready in due order, at most depth members of each. Returns an item (state,
-- priority, due, where, member) or nil, and whether the search was exhaustive.
local function store_find(k, id, now, depth)
  local function in_ready(m, due)
    local _, p = id_of(m)
    local it = {state = 'ready', prio = p, where = 'ready', member = m}
    if due > now then it.state, it.due = 'delayed', due end
    return it
  end
  local prios, seen = {0}, {[0] = true}
  local head = redis.call('ZRANGE', k.queue, 0, 0, 'WITHSCORES')
  for _ = 1, ADMIN_PROBES do
    if not head[1] then break end
    local p = PRIORITY_MAX - tonumber(head[2])
    if not seen[p] then
      seen[p] = true
      prios[#prios + 1] = p
    end
    head = redis.call('ZRANGE', k.queue, '(' .. head[2], '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
  end
  local members = {}
  for i, p in ipairs(prios) do members[i] = member(id, p) end
  local dues = redis.call('ZMSCORE', k.ready, unpack(members))
  for i, m in ipairs(members) do
    if dues[i] then return in_ready(m, tonumber(dues[i])), true end
  end
  local function look(key, match)
    local n = math.min(redis.call('ZCARD', key), depth)
    for from = 0, n - 1, ADMIN_CHUNK do
      local got = redis.call('ZRANGE', key, from, math.min(from + ADMIN_CHUNK, n) - 1, 'WITHSCORES')
      for i = 1, #got, 2 do
        if match(got[i]) then return got[i], tonumber(got[i + 1]) end
      end
    end
  end
  local tail = string.char(64 + #id) .. id
  local m, rank = look(k.queue, function(q)
    return #q == DUE_DIGITS + #tail and string.sub(q, -#tail) == tail
  end)
  if m then return {state = 'ready', prio = PRIORITY_MAX - rank, where = 'queue', member = m}, true end
  tail = string.format(':%016d', tonumber(id))
  local due
  m, due = look(k.ready, function(r) return #r == MEMBER_LEN and string.sub(r, -#tail) == tail end)
  if m then return in_ready(m, due), true end
  return nil, redis.call('ZCARD', k.queue) <= depth and redis.call('ZCARD', k.ready) <= depth
end

-- store_delete removes a message store_find found: a member of ready at once (its body with
-- its last group); one in queue is marked ACKED, and the claim that reaches it drops it and
-- frees its body.
local function store_delete(k, it)
  admin_drop(k, it.where == 'ready' and k.ready or nil, it.member, it.id)
end

-- store_run makes a delayed message store_find found due now: into queue at its priority,
-- behind what of it is due already, and wakes a blocked consumer; false when it is not delayed.
local function store_run(k, it, now)
  if it.state ~= 'delayed' then return false end
  redis.call('ZREM', k.ready, it.member)
  redis.call('ZADD', k.queue, PRIORITY_MAX - it.prio, queued(now, it.id))
  wake(k.wake)
  return true
end
