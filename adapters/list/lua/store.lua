-- store.lua: the list backend's ready store, for internal/engine's scripts: a LIST of ready
-- entries, a ZSET of delayed ids, and processing, the LIST that BLMOVE moves an entry into
-- before register.lua leases it. Its keys are k.ready, k.delayed and k.processing.
--
-- A ready entry is "id@ms": the delivery ID and when it became ready (ms, Redis clock), so the
-- oldest ready age needs no per-message index. Entries are pushed at the left (the back) and
-- claimed from the right (the consume end).
--
-- ready may also hold one WAKE entry, which is no message: a consumer blocked in BLMOVE sees
-- only ready, so a script that schedules a delayed message due before any other while the
-- group is marked asleep (meta's w:<group>, written by store_wait) pushes WAKE into an empty
-- ready. The consumer that moves it learns the new due time from the claim it runs next, and
-- runs promote.lua at that time, which moves the message into ready, where BLMOVE takes it.
-- Every reader of ready and processing skips WAKE (set from Go: backend.go's wakeEntry).

local function entry(id, at)
  return id .. '@' .. ms(at)
end

-- split returns the id of an entry and its ready-since time (nil for a bare id).
local function split(e)
  local at = string.find(e, '@', 1, true)
  if not at then return e, nil end
  return string.sub(e, 1, at - 1), tonumber(string.sub(e, at + 1))
end

-- wake_for pushes WAKE into ready when a delayed message due at due was just scheduled that
-- sleeping consumers cannot know of: the group is marked asleep (mark, meta's w:<group>, is
-- at or after now), nothing is due earlier in delayed (first, its earliest due time before
-- this script added to it: a consumer learned that one when it was scheduled, or at its last
-- claim), and ready is empty (what is there wakes a consumer anyway, WAKE included). O(1).
-- The push may create ready: the caller keeps an ephemeral group's expiry. A full Redis may
-- refuse it; then the consumers learn of the message at their next probe.
local function wake_for(k, due, first, mark, now)
  if not due or not mark or (tonumber(mark) or 0) < now then return end
  if first and first <= due then return end
  if redis.call('LLEN', k.ready) > 0 then return end
  redis.pcall('RPUSH', k.ready, WAKE)
end

-- store_push routes a publish's messages ({id, delay, prio}) to this group: due ones to the
-- back of ready, delayed ones to delayed, waking a sleeping consumer (wake_for; mark is the
-- group's wake mark).
local function store_push(k, msgs, now, mark)
  local ready, delayed = {}, {}
  local soonest
  for _, m in ipairs(msgs) do
    if m.delay > 0 then
      delayed[#delayed + 1] = now + m.delay
      delayed[#delayed + 1] = m.id
      soonest = math.min(soonest or math.huge, now + m.delay)
    else
      ready[#ready + 1] = entry(m.id, now)
    end
  end
  if #ready > 0 then call_chunked('LPUSH', k.ready, ready, 1) end
  if #delayed > 0 then
    local first = mark and first_due(k, k.delayed)
    call_chunked('ZADD', k.delayed, delayed, 2)
    k.first_due = nil
    wake_for(k, soonest, first, mark, now)
  end
end

-- promote moves up to limit due delayed ids to the back of ready, ready since their due time.
-- With nothing due it costs one look at the earliest.
local function promote(k, now, limit)
  local first = first_due(k, k.delayed)
  if limit <= 0 or not first or first > now then return 0 end
  k.first_due = nil
  local due = redis.call('ZRANGE', k.delayed, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
  local ids, entries = {}, {}
  for i = 1, #due, 2 do
    ids[#ids + 1] = due[i]
    entries[#entries + 1] = entry(due[i], tonumber(due[i + 1]))
  end
  call_chunked('ZREM', k.delayed, ids, 1)
  call_chunked('LPUSH', k.ready, entries, 1)
  return #ids
end

-- store_take promotes what is due, then takes up to n entries from the consume end. It returns
-- their ids (and no notes: a list message goes back by its id alone).
local function store_take(k, n, now, limit)
  promote(k, now, limit)
  local es = redis.call('RPOP', k.ready, n)
  if not es then return {} end
  local ids = {}
  for _, e in ipairs(es) do
    if e ~= WAKE then ids[#ids + 1] = split(e) end
  end
  return ids
end

-- store_claimed: nothing to do; a publish hands list messages to every blocked consumer.
local function store_claimed(_, _, _, _) end

-- store_wait is the ms until the earliest delayed message is due (0: now), or -1. Called by a
-- claim (group given) that found nothing, it marks the group asleep in meta until the
-- caller's wait (block ms) is over, so that a script scheduling a delayed message meanwhile
-- wakes a consumer (wake_for). The pcall keeps the claim answering on a full Redis.
local function store_wait(k, now, group, block)
  if group and block and block > 0 then redis.pcall('HSET', k.meta, 'w:' .. group, now + block) end
  local first = first_due(k, k.delayed)
  if not first then return -1 end
  return math.max(0, first - now)
end

-- store_back puts items back: a release, an immediate retry and a reclaimed lease at the
-- consume end, in the order given (the first is claimed first); a requeued dead letter at the
-- back; a delayed retry in delayed, waking a sleeping consumer (wake_for) when the caller
-- named the group (k.name: nack.lua).
local function store_back(k, items, now)
  local front, back, delayed = {}, {}, {}
  local soonest
  for i = #items, 1, -1 do -- the first item ends up nearest the consume end
    local it = items[i]
    if it.kind == 'delay' then
      delayed[#delayed + 1] = it.due
      delayed[#delayed + 1] = it.id
      soonest = math.min(soonest or math.huge, it.due)
    elseif it.kind ~= 'requeue' then
      front[#front + 1] = entry(it.id, now)
    end
  end
  for _, it in ipairs(items) do -- LPUSH in order: the first requeued is claimed first of them
    if it.kind == 'requeue' then back[#back + 1] = entry(it.id, now) end
  end
  if #front > 0 then call_chunked('RPUSH', k.ready, front, 1) end
  if #back > 0 then call_chunked('LPUSH', k.ready, back, 1) end
  if #delayed > 0 then
    local mark = k.name and redis.call('HGET', k.meta, 'w:' .. k.name)
    local first = mark and first_due(k, k.delayed)
    call_chunked('ZADD', k.delayed, delayed, 2)
    k.first_due = nil
    wake_for(k, soonest, first, mark, now)
  end
end

-- store_next_due is the ms until the earliest delayed message is due, which Reclaim promotes,
-- or -1: the reclaim loop wakes then.
local function store_next_due(k, now)
  return store_wait(k, now)
end

-- store_upkeep promotes due delayed messages and leases orphans: entries BLMOVE moved to
-- processing whose consumer died before register.lua. Each gets an orphan lease held by
-- nobody, which register.lua takes over if its consumer is alive after all, or which expires
-- like any lease. Its record's attempt is the deliveries so far, without this one: no handler
-- has seen it, so an expired orphan lease is not an attempt. Returns promoted, orphans.
local function store_upkeep(k, now, n, orphan_lease)
  local promoted = promote(k, now, n)
  local es = redis.call('RPOP', k.processing, n)
  if not es then return promoted, 0 end
  local ids = {}
  for _, e in ipairs(es) do
    if e ~= WAKE then ids[#ids + 1] = split(e) end -- a WAKE whose consumer died: dropped
  end
  if #ids == 0 then return promoted, 0 end
  local tries = redis.call('HMGET', k.retries, unpack(ids))
  local items, retried, done = {}, {}, {}
  for i, id in ipairs(ids) do
    if tries[i] then retried[#retried + 1] = id end
    if tries[i] == ACKED then
      done[#done + 1] = id -- acked while it waited: nothing left to deliver
    else
      items[#items + 1] = {id = id, consumer = '', attempt = tonumber(tries[i]) or 0, since = now, extra = ''}
    end
  end
  if #retried > 0 then call_chunked('HDEL', k.retries, retried, 1) end
  unref(k, done)
  pend(k, items, now + orphan_lease)
  return promoted, #items
end

-- store_size is how many messages the store holds: ready, delayed and in processing. O(1).
-- A WAKE waiting in ready counts too: there is one at most, and only in a group's store, not
-- in a topic's backlog, which is what store_size bounds.
local function store_size(k)
  return redis.call('LLEN', k.ready) + redis.call('ZCARD', k.delayed) + redis.call('LLEN', k.processing)
end

-- store_drop removes up to n messages, those a claim would take first (the consume end of
-- ready), then the earliest delayed, then processing, and returns their ids and how many it
-- removed (a backlog over its limit, a deleted group's keys being freed).
local function store_drop(k, n)
  local ids, removed = {}, 0
  local function add(es)
    for _, e in ipairs(es or {}) do
      if e ~= WAKE then ids[#ids + 1] = split(e) end
      removed = removed + 1
    end
  end
  add(redis.call('RPOP', k.ready, n))
  if removed < n then
    local z = redis.call('ZPOPMIN', k.delayed, n - removed)
    for i = 1, #z, 2 do ids[#ids + 1] = z[i] end
    removed = removed + #z / 2
  end
  if removed < n then add(redis.call('RPOP', k.processing, n - removed)) end
  return ids, removed
end

-- store_counts returns ready, delayed, the oldest ready-since time among the window entries at
-- each end of ready (nil: none), and the entries staged in processing, which count as pending
-- (but a WAKE among the first window of them).
-- Everything between the ends was pushed at the back in time order (publish, requeue) or is a
-- promoted delayed message ready since its due time; retries and reclaims go to the consume
-- end. So the age is exact unless more than window of those sit at the consume end, or a
-- promoted message is more than window from the back; then it is a lower bound. A WAKE in
-- ready is no message and not counted, when the scan sees it (always, unless ready holds more
-- than twice window entries).
local function store_counts(k, now, window)
  local n = redis.call('LLEN', k.ready)
  local oldest, wakes = nil, 0
  local function scan(from, to)
    for _, e in ipairs(redis.call('LRANGE', k.ready, from, to)) do
      local _, at = split(e)
      if e == WAKE then wakes = wakes + 1 end
      if at and (not oldest or at < oldest) then oldest = at end
    end
  end
  if n > 0 then
    scan(-window, -1)
    if n > window then scan(0, math.min(window, n - window) - 1) end
  end
  -- A WAKE that a BLMOVE just staged is no message either: its consumer drops it at once.
  local staged = redis.call('LLEN', k.processing)
  if staged > 0 then
    for _, e in ipairs(redis.call('LRANGE', k.processing, 0, window - 1)) do
      if e == WAKE then staged = staged - 1 end
    end
  end
  return n - wakes, redis.call('ZCARD', k.delayed), oldest, staged
end

-- Admin: listing and finding messages

-- The ready LIST can be read only by position (LRANGE and LPOS are O(position)): a listing
-- pages it from the consume end and a search by id looks through it, neither deeper than the
-- depth the caller gives. The delayed ZSET and the engine's states are searched by id.

-- admin_prio: the list backend keeps no priority.
local function admin_prio(_) return 0 end

-- store_ready_page appends to items the ready entries from the consume end, after the cursor
-- entry (cur; '': from the start), until count are listed or limit were looked at, no deeper
-- than depth. The cursor entry is found again by value (LPOS from the consume end): entries
-- leave ready only from that end, so one that is gone took every entry before it along, and
-- the listing resumes at the consume end. Returns the position and the entry of the last one
-- looked at, or nil when ready is exhausted; or an error reply past depth.
local function store_ready_page(k, cur, count, limit, depth, items)
  local n = redis.call('LLEN', k.ready)
  local pos = 0
  if cur ~= '' then
    local at = redis.call('LPOS', k.ready, cur, 'RANK', -1, 'MAXLEN', depth)
    if at then
      pos = n - at
    elseif n > depth then
      return admin_error('DEEP')
    end
  end
  if pos < n and pos >= depth then return admin_error('DEEP') end
  local last
  local seen = 0
  while pos < n and pos < depth and #items < count and seen < limit do
    local c = math.min(n - pos, depth - pos, count - #items, ADMIN_CHUNK)
    local es = redis.call('LRANGE', k.ready, -(pos + c), -(pos + 1))
    local chunk, ids = {}, {}
    for i = #es, 1, -1 do
      if es[i] ~= WAKE then
        local id = split(es[i])
        chunk[#chunk + 1] = {id = id, state = 'ready'}
        ids[#ids + 1] = id
      end
      last = es[i]
    end
    pos, seen = pos + #es, seen + #es
    local tries = #ids > 0 and read_tries(k, ids) or {}
    for i, it in ipairs(chunk) do
      if tries[i] ~= ACKED then
        it.attempts = tonumber(tries[i]) or 0
        items[#items + 1] = it
      end
    end
  end
  if pos >= n then return nil end
  return pos - 1, last
end

-- store_page appends one page of state ('ready' or 'delayed') to items, after the cursor
-- (phase, score, member; member '': from the start). Returns the next cursor's phase, score
-- and member (phase nil: last page), or an error reply.
local function store_page(k, state, phase, score, member, count, limit, depth, now, items)
  if state == 'ready' then
    if phase ~= 'l' then return admin_error('BADCURSOR') end
    local pos, last = store_ready_page(k, member, count, limit, depth, items)
    if type(pos) == 'table' then return pos end
    if pos then return 'l', pos, last end
    return nil
  end
  if phase ~= 'd' then return admin_error('BADCURSOR') end
  local from = admin_start(k.delayed, score, member, 0)
  local s, m = admin_zpage(k, k.delayed, from, redis.call('ZCARD', k.delayed), count, limit,
    function(id, due) return {id = id, state = 'delayed', due = due} end, true, items)
  if s then return 'd', s, m end
  return nil
end

-- store_first_phase is the cursor phase a listing of state starts in.
local function store_first_phase(state)
  if state == 'ready' then return 'l' end
  return 'd'
end

-- store_find finds id in the store: delayed by id, ready (and staged in processing, which
-- count as pending) by looking through the entries nearest the consume end, at most depth.
-- Returns an item (state, due, where) or nil, and whether the search was exhaustive.
local function store_find(k, id, _, depth)
  local due = redis.call('ZSCORE', k.delayed, id)
  if due then return {state = 'delayed', due = tonumber(due), where = 'delayed'}, true end
  local prefix = id .. '@'
  local function look(key, n)
    local pos = 0
    while pos < n do
      local c = math.min(n - pos, ADMIN_CHUNK)
      for _, e in ipairs(redis.call('LRANGE', key, -(pos + c), -(pos + 1))) do
        if string.sub(e, 1, #prefix) == prefix or e == id then return true end
      end
      pos = pos + c
    end
    return false
  end
  local n = redis.call('LLEN', k.ready)
  if look(k.ready, math.min(n, depth)) then return {state = 'ready', where = 'ready'}, true end
  local staged = redis.call('LLEN', k.processing)
  if look(k.processing, math.min(staged, depth)) then return {state = 'pending', where = 'staged'}, true end
  return nil, n <= depth and staged <= depth
end

-- store_delete removes a message store_find found: a delayed one at once (its body with its
-- last group); a ready or staged one is marked ACKED, and the claim that reaches it drops it
-- and frees its body (the LIST cannot remove it by id).
local function store_delete(k, it)
  admin_drop(k, it.where == 'delayed' and k.delayed or nil, it.id, it.id)
end

-- store_run makes a delayed message store_find found due now, at the back of ready as a
-- promotion puts it; false when it is not delayed.
local function store_run(k, it, now)
  if it.where ~= 'delayed' then return false end
  redis.call('ZREM', k.delayed, it.id)
  redis.call('LPUSH', k.ready, entry(it.id, now))
  return true
end
