-- stats.lua: read a group's state in one consistent snapshot, ages on the Redis clock. Read-only.
--
-- KEYS[1] -> ready (LIST)         KEYS[5] -> pending_at (ZSET id -> pending since, ms)
-- KEYS[2] -> delayed (ZSET)       KEYS[6] -> ready_at (ZSET id -> ready since, ms)
-- KEYS[3] -> processing (LIST)    KEYS[7] -> counters (HASH)
-- KEYS[4] -> dead (ZSET)
-- Returns {ready, delayed, pending, dead, oldest pending age ms, oldest ready age ms, counters}
-- with ages -1 when there is none and counters as HGETALL's flat list.

local now = now_ms()
local function age(key)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if not first[2] then return -1 end
  return math.max(0, now - tonumber(first[2]))
end
return {redis.call('LLEN', KEYS[1]), redis.call('ZCARD', KEYS[2]), redis.call('LLEN', KEYS[3]),
  redis.call('ZCARD', KEYS[4]), age(KEYS[5]), age(KEYS[6]), redis.call('HGETALL', KEYS[7])}
