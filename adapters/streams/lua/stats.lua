-- stats.lua: read a group's state in one consistent snapshot, ages on the Redis clock.
-- Read-only.
--
-- Ready: entries the group has not read (XINFO GROUPS lag, or counted after its
-- last-delivered-id where Redis cannot tell the lag) that are not delayed, plus retries due.
-- Delayed: unread entries whose due time is to come, plus retries not due yet. Pending: the
-- PEL except the parking consumer's entries.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET) the group's
-- KEYS[3] -> delayed (ZSET) the topic's
-- KEYS[4] -> counters (HASH) the group's
-- KEYS[5] -> published (STRING) the topic's
-- KEYS[6] -> pending_at (ZSET) the group's
-- KEYS[7] -> dead (STREAM) the group's dead letters
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> the most unread entries counted one by one when the lag is unknown
-- Returns {ready, delayed, pending, dead, oldest pending age ms, oldest ready age ms,
-- counters (HGETALL), published} with ages -1 when there is none.

local k = {stream = KEYS[1], retry = KEYS[2], delayed = KEYS[3], counters = KEYS[4],
  published = KEYS[5], pending = KEYS[6], dead = KEYS[7], group = ARGV[1], parked = ARGV[2]}
local cap = tonumber(ARGV[3])
local now = now_ms()
local unread, delayed_unread, pending_n, oldest_ready = 0, 0, 0, nil

local info = nil
local groups = redis.pcall('XINFO', 'GROUPS', k.stream)
if type(groups) == 'table' and not groups.err then
  for _, g in ipairs(groups) do
    local t = {}
    for i = 1, #g, 2 do t[g[i]] = g[i + 1] end
    if t['name'] == k.group then info = t end
  end
end

if info then
  local last = info['last-delivered-id']
  if info['lag'] then
    unread = tonumber(info['lag'])
  else
    local from = '(' .. last
    while unread < cap do
      local page = redis.call('XRANGE', k.stream, from, '+', 'COUNT', math.min(1000, cap - unread))
      unread = unread + #page
      if #page == 0 then break end
      from = '(' .. page[#page][1]
    end
  end
  local is_delayed = {}
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', k.delayed, '(' .. now, '+inf')) do
    if id_cmp(id, last) > 0 then
      delayed_unread = delayed_unread + 1
      is_delayed[id] = true
    end
  end
  if unread > delayed_unread then
    for _, e in ipairs(redis.call('XRANGE', k.stream, '(' .. last, '+', 'COUNT', delayed_unread + 1)) do
      if not is_delayed[e[1]] then
        local d = redis.call('ZSCORE', k.delayed, e[1])
        oldest_ready = d and tonumber(d) or published_at(e[1], now)
        break
      end
    end
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
local delayed = delayed_unread + redis.call('ZCOUNT', k.retry, '(' .. now, '+inf')

local function age(since)
  if not since then return -1 end
  return math.max(0, now - since)
end
local first_pending = redis.call('ZRANGE', k.pending, 0, 0, 'WITHSCORES')
return {ready, delayed, pending_n, redis.call('XLEN', k.dead),
  age(first_pending[2] and tonumber(first_pending[2])), age(oldest_ready),
  redis.call('HGETALL', k.counters), tonumber(redis.call('GET', k.published) or '0')}
