-- stats.lua: read a group's state in one consistent snapshot, on the Redis clock. Read-only.
-- Ready members are those due (score <= now), delayed ones those not yet due; a ready member
-- has been ready since its due time.
--
-- KEYS[1] -> ready (ZSET member -> due, ms)     KEYS[3] -> dead (ZSET)
-- KEYS[2] -> pending_at (ZSET id -> since, ms)  KEYS[4] -> counters (HASH)
-- Returns {ready, delayed, pending, dead, oldest pending age ms, oldest ready age ms, counters}
-- with ages -1 when there is none and counters as HGETALL's flat list.

local now = now_ms()
local function age(key, upto)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if not first[2] or tonumber(first[2]) > upto then return -1 end
  return math.max(0, now - tonumber(first[2]))
end
return {redis.call('ZCOUNT', KEYS[1], '-inf', now), redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'),
  redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]), age(KEYS[2], now), age(KEYS[1], now),
  redis.call('HGETALL', KEYS[4])}
