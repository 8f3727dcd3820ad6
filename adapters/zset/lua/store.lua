-- store.lua: the zset backend's ready store, for internal/engine's scripts: one ZSET, k.ready,
-- whose score is a message's due time in ms on the Redis clock (due and delayed alike), and
-- k.wake, the LIST of wake-up tokens that blocked claims wait on. PRIORITY_MIN, PRIORITY_MAX,
-- RANK_DIGITS and WAKE_TTL_MS are set from Go (scripts.go).
--
-- Members of equal score sort bytewise, so a member is written to sort in the order messages
-- due together are delivered: "<rank>:<id>", the rank PRIORITY_MAX - priority (higher
-- priority, lower rank) zero-padded to RANK_DIGITS and the delivery ID zero-padded to 16
-- digits (publish order within a priority). A pending message's extra (engine.lua) is
-- "due:priority": the due time it had when claimed and its priority.

local MEMBER_FORMAT = '%0' .. RANK_DIGITS .. 'd:%016d'
local MEMBER_LEN = RANK_DIGITS + 17

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

-- wake pushes a wake-up token for the consumers blocked in BLPOP on key, unless one is waiting
-- already: one token wakes one consumer, which passes it on if more is due (store_claimed).
-- The token expires, so an unclaimed one does not outlive the moment it was meant for.
local function wake(key)
  if redis.call('LLEN', key) == 0 then
    redis.call('RPUSH', key, '1')
    redis.call('PEXPIRE', key, WAKE_TTL_MS)
  end
end

-- store_push adds a publish's messages ({id, delay, prio}) to ready, due at now + delay, and
-- wakes a blocked consumer when one is asleep: mark is the group's wake mark in meta, the time
-- until which a consumer said it sleeps (store_wait).
local function store_push(k, msgs, now, mark)
  local z = {}
  for _, m in ipairs(msgs) do
    z[#z + 1] = now + m.delay
    z[#z + 1] = member(m.id, math.max(PRIORITY_MIN, math.min(PRIORITY_MAX, m.prio)))
  end
  call_chunked('ZADD', k.ready, z, 2)
  if mark == 'force' or (mark and tonumber(mark) >= now) then wake(k.wake) end
end

-- store_take takes up to n members due at now, in ZSET order (due time, then rank, then id),
-- and returns their ids and notes (due time and priority).
-- With nothing due it costs one look at the earliest member.
local function store_take(k, n, now, _)
  local first = first_due(k, k.ready)
  if not first or first > now then return {} end
  k.first_due = nil
  local due = redis.call('ZRANGE', k.ready, '-inf', now, 'BYSCORE', 'LIMIT', 0, n, 'WITHSCORES')
  local ids, extras, members = {}, {}, {}
  for i = 1, #due, 2 do
    members[#members + 1] = due[i]
    local id, p = id_of(due[i])
    if id then
      ids[#ids + 1] = id
      extras[#ids] = due[i + 1] .. ':' .. p
    end
  end
  if #members > 0 then call_chunked('ZREM', k.ready, members, 1) end
  return ids, extras
end

-- store_claimed passes a wake-up on when a full batch was taken, more is due and a consumer
-- of the group may be asleep, so one wake-up drains a burst across several consumers. Busy
-- consumers, which mark nobody asleep, pay one HGET per full batch.
local function store_claimed(k, full, now, group)
  if not full then return end
  local mark = redis.call('HGET', k.meta, 'w:' .. group)
  if mark and tonumber(mark) >= now
    and #redis.call('ZRANGE', k.ready, '-inf', now, 'BYSCORE', 'LIMIT', 0, 1) > 0 then
    wake(k.wake)
  end
end

-- store_wait is the ms until the earliest member is due (0: now), or -1 when none is
-- scheduled. It marks the group asleep in meta until the caller's wait is over, so publishes
-- push a wake-up token while someone may be blocked and skip it otherwise. The mark is the
-- script's only write, which Redis refuses when it is out of memory: then it is left out (no
-- publish can succeed to need it), and the claim still answers.
local function store_wait(k, now, group, block)
  if block > 0 then redis.pcall('HSET', k.meta, 'w:' .. group, now + block) end
  local first = first_due(k, k.ready)
  if not first then return -1 end
  return math.max(0, first - now)
end

-- extra_of reads a pending message's extra: due time and priority.
local function extra_of(x)
  local due, p = string.match(x or '', '^(%d+):(-?%d+)$')
  return tonumber(due), tonumber(p) or 0
end

-- store_back puts items back in ready. A delayed retry is due at its due time; a release and
-- an immediate retry keep their place in line (the due time they had when claimed, never
-- later than now), so one consumer still sees publish order; a reclaimed lease and a requeued
-- dead letter are due now, behind what is already due. A blocked consumer is woken.
local function store_back(k, items, now)
  if #items == 0 then return end
  local z = {}
  for _, it in ipairs(items) do
    local due, p = extra_of(it.extra)
    local score = now
    if it.kind == 'delay' then
      score = it.due
    elseif (it.kind == 'release' or it.kind == 'retry') and due then
      score = math.min(now, due)
    end
    z[#z + 1] = score
    z[#z + 1] = member(it.id, p)
  end
  call_chunked('ZADD', k.ready, z, 2)
  k.first_due = nil
  wake(k.wake)
end

-- store_next_due: -1, delayed messages wait in ready itself and need no promotion.
local function store_next_due(_, _) return -1 end

-- store_upkeep: nothing to promote (delayed messages wait in ready itself) and no orphans (a
-- claim takes and leases in one script).
local function store_upkeep(_, _, _, _) return 0, 0 end

-- store_counts returns ready (due) and delayed members, the due time of the earliest due
-- member (nil: none), and 0 staged.
local function store_counts(k, now, _)
  local first = redis.call('ZRANGE', k.ready, 0, 0, 'WITHSCORES')
  local since
  if first[2] and tonumber(first[2]) <= now then since = tonumber(first[2]) end
  return redis.call('ZCOUNT', k.ready, '-inf', now), redis.call('ZCOUNT', k.ready, '(' .. now, '+inf'), since, 0
end
