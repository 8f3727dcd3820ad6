-- stats.lua: read a group's state in one consistent snapshot, ages on the Redis clock. Read-only.
--
-- Both ages look at ARGV[1] entries at the ends of a LIST instead of a per-message index.
-- The oldest ready age is the oldest ready-since among the entries at each end of ready.
-- Everything in between was pushed at the back in time order (publish, requeue) or is a
-- promoted delayed message ready since its due time; immediate retries and reclaims go to the
-- consume end. So the figure is exact unless more than ARGV[1] of those sit at the consume end,
-- or a promoted message is more than ARGV[1] from the back; then it is a lower bound.
-- The oldest pending age is the oldest pending-since among the holders of the entries at the
-- right end of processing, where claims are oldest (a claim pushes at the left); an entry
-- BLMOVE moved and nobody registered yet ("id@ms") has no holder and is not counted.
--
-- KEYS[1] -> ready (LIST of "id@ms")   KEYS[4] -> dead (ZSET)
-- KEYS[2] -> delayed (ZSET)            KEYS[5] -> holders (HASH id -> "consumer:pending since")
-- KEYS[3] -> processing (LIST)         KEYS[6] -> counters (HASH)
-- ARGV[1] -> entries looked at at each end of ready, and at the right end of processing
-- Returns {ready, delayed, pending, dead, oldest pending age ms, oldest ready age ms, counters}
-- with ages -1 when there is none and counters as HGETALL's flat list.

local now = now_ms()
local window = tonumber(ARGV[1])

local function age(oldest)
  if not oldest then return -1 end
  return math.max(0, now - oldest)
end

local function pending_age()
  local ids = redis.call('LRANGE', KEYS[3], -window, -1)
  if #ids == 0 then return -1 end
  local oldest
  for _, v in ipairs(redis.call('HMGET', KEYS[5], unpack(ids))) do
    local ms = since_of(v)
    if ms and (not oldest or ms < oldest) then oldest = ms end
  end
  return age(oldest)
end

local function ready_age(n)
  local oldest
  local function scan(from, to)
    for _, e in ipairs(redis.call('LRANGE', KEYS[1], from, to)) do
      local _, ms = split(e)
      if ms and (not oldest or ms < oldest) then oldest = ms end
    end
  end
  scan(-window, -1)
  if n > window then scan(0, math.min(window, n - window) - 1) end
  return age(oldest)
end

local ready = redis.call('LLEN', KEYS[1])
return {ready, redis.call('ZCARD', KEYS[2]), redis.call('LLEN', KEYS[3]),
  redis.call('ZCARD', KEYS[4]), pending_age(), ready_age(ready), redis.call('HGETALL', KEYS[6])}
