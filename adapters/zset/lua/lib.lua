-- lib.lua: helpers prepended to every script of the zset adapter (see scripts.go), after the
-- constants scripts.go sets from Go (PRIORITY_MIN, PRIORITY_MAX, RANK_DIGITS and WAKE_TTL_MS)
-- and internal/luakit's common.lua (now_ms), groupstate.lua (holds, bury) and registry.lua
-- (stale_groups). It declares no keys: every helper takes key names that the calling script
-- received in KEYS, gathered in a table k (k.ready, k.leases, ...).
--
-- A group's ready store is one ZSET, k.ready: the score of a member is its due time in ms on
-- the Redis clock. Members of equal score sort bytewise, so a member is written to sort in the
-- order messages due together are delivered: "<rank>:<id>", the rank PRIORITY_MAX - priority
-- (higher priority, lower rank) zero-padded to RANK_DIGITS and the delivery ID zero-padded to
-- 16 digits (publish order within a priority).

local MEMBER_FORMAT = '%0' .. RANK_DIGITS .. 'd:%016d'
local MEMBER_PATTERN = '^' .. string.rep('%d', RANK_DIGITS) .. ':(' .. string.rep('%d', 16) .. ')$'

-- member is the ready member of id with priority p (clamped by the caller). Lua numbers are
-- exact up to 2^53, below 10^16.
local function member(id, p)
  return string.format(MEMBER_FORMAT, PRIORITY_MAX - p, tonumber(id))
end

-- id_of is the delivery ID of a ready member, or nil for a member relq did not write.
local function id_of(m)
  local digits = string.match(m, MEMBER_PATTERN)
  if not digits then return nil end
  return string.format('%d', tonumber(digits))
end

-- priority_of is id's priority, stored by publish.lua only when it is not 0.
local function priority_of(k, id)
  local p = tonumber(redis.call('HGET', k.prio, id) or '0') or 0
  return math.max(PRIORITY_MIN, math.min(PRIORITY_MAX, p))
end

-- put_back makes id ready again, due at score, with its priority.
local function put_back(k, id, score)
  redis.call('ZADD', k.ready, score, member(id, priority_of(k, id)))
end

-- wake pushes a wake-up token for the consumers blocked in BLPOP on key, unless one is waiting
-- already: one token wakes one consumer, which passes the wake-up on if more is due (claim.lua).
-- The token expires, so an unclaimed one does not outlive the moment it was meant for.
local function wake(key)
  if redis.call('LLEN', key) == 0 then
    redis.call('RPUSH', key, '1')
    redis.call('PEXPIRE', key, WAKE_TTL_MS)
  end
end

-- unlease removes the lease, holder, pending-since and claimed due time of id (not its attempts).
local function unlease(k, id)
  redis.call('ZREM', k.leases, id)
  redis.call('HDEL', k.holders, id)
  redis.call('ZREM', k.pending, id)
  redis.call('HDEL', k.dueat, id)
end

-- take claims up to n members due at now, in ZSET order (due time, then rank, then id). Each
-- is leased to consumer, and the due time it had is kept in due_at; id, attempt and body are
-- appended to out. A member without a body (purged, or foreign data) is dropped; the work is
-- bounded so a run of them keeps the script short.
local function take(k, consumer, n, now, deadline, out)
  local got, tries = 0, 0
  while got < n and tries < n + 100 do
    local asked = n - got
    local due = redis.call('ZRANGE', k.ready, '-inf', now, 'BYSCORE', 'LIMIT', 0, asked, 'WITHSCORES')
    for i = 1, #due, 2 do
      tries = tries + 1
      redis.call('ZREM', k.ready, due[i])
      local id = id_of(due[i])
      local body = id and redis.call('HGET', k.bodies, id)
      if body then
        local attempt = redis.call('HINCRBY', k.attempts, id, 1)
        redis.call('ZADD', k.leases, deadline, id)
        redis.call('HSET', k.holders, id, consumer)
        redis.call('ZADD', k.pending, now, id)
        redis.call('HSET', k.dueat, id, due[i + 1])
        out[#out + 1] = id
        out[#out + 1] = attempt
        out[#out + 1] = body
        got = got + 1
      elseif id then
        redis.call('HDEL', k.attempts, id)
      end
    end
    if #due / 2 < asked then break end
  end
  return got
end
