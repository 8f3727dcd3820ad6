-- lib.lua: helpers prepended to every script of the list adapter (see scripts.go), after
-- internal/luakit's common.lua (now_ms), groupstate.lua (holds, bury) and registry.lua
-- (stale_groups). It declares no keys: every helper takes key names that the calling script
-- received in KEYS, gathered in a table k (k.ready, k.processing, ...).

-- A ready entry is "id@ms": the delivery ID and when it became ready (ms, Redis clock), so the
-- oldest ready age needs no per-message index. processing holds bare ids: a claim strips the
-- time in place (LSET) right after moving the entry.

-- entry makes the ready entry of id, ready since ms.
local function entry(id, ms)
  return id .. '@' .. string.format('%d', ms)
end

-- split returns the id of a ready entry and its ready-since time (nil for a bare id).
local function split(e)
  local at = string.find(e, '@', 1, true)
  if not at then return e, nil end
  return string.sub(e, 1, at - 1), tonumber(string.sub(e, at + 1))
end

-- unlease removes the lease and holder (with the pending-since time) of id, not its attempts.
local function unlease(k, id)
  redis.call('ZREM', k.leases, id)
  redis.call('HDEL', k.holders, id)
end

-- since_of returns the pending-since time (ms) in a holders value "consumer:since", or nil.
local function since_of(v)
  if not v then return nil end
  return tonumber(string.match(v, ':(%d+)$'))
end

-- make_ready puts id back at the consume end of ready, ready since now.
local function make_ready(k, id, now)
  redis.call('RPUSH', k.ready, entry(id, now))
end

-- lease registers a claim of id (already in processing) for consumer and returns its attempt.
-- The holder is stored with the time id became pending: since, when given (an orphan lease
-- taken over, so the age counts from first sight), else now.
local function lease(k, id, consumer, now, deadline, since)
  local attempt = redis.call('HINCRBY', k.attempts, id, 1)
  redis.call('ZADD', k.leases, deadline, id)
  redis.call('HSET', k.holders, id, consumer .. ':' .. string.format('%d', since or now))
  return attempt
end

-- forget drops every trace of id in this group: its body is gone (purged or foreign data), so
-- there is nothing to deliver.
local function forget(k, id)
  redis.call('LREM', k.processing, 1, id)
  redis.call('HDEL', k.attempts, id)
  unlease(k, id)
end

-- take moves up to n ids ready -> processing under a lease, appending id, attempt, body to out.
-- Ids whose body is missing are forgotten; the loop is bounded so a run of them stays short.
local function take(k, consumer, n, now, deadline, out)
  local got, tries = 0, 0
  while got < n and tries < n + 100 do
    tries = tries + 1
    local e = redis.call('LMOVE', k.ready, k.processing, 'RIGHT', 'LEFT')
    if not e then break end
    local id = split(e)
    if id ~= e then redis.call('LSET', k.processing, 0, id) end
    local body = redis.call('HGET', k.bodies, id)
    if body then
      out[#out + 1] = id
      out[#out + 1] = lease(k, id, consumer, now, deadline)
      out[#out + 1] = body
      got = got + 1
    else
      forget(k, id)
    end
  end
  return got
end

-- promote moves up to limit due delayed ids to the back of ready, ready since their due time.
local function promote(k, now, limit)
  local due = redis.call('ZRANGEBYSCORE', k.delayed, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  for i = 1, #due, 2 do
    redis.call('ZREM', k.delayed, due[i])
    redis.call('LPUSH', k.ready, entry(due[i], tonumber(due[i + 1])))
  end
  return #due / 2
end

