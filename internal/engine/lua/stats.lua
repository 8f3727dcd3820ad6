-- stats.lua: read a group's state in one consistent snapshot, ages on the Redis clock.
-- Read-only. Every count is O(1) or O(log N); the store's ready figures are its own
-- (store_counts).
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> the store's window (list: entries looked at at each end of ready)
-- Returns {ready, delayed, pending, dead, oldest pending age ms, oldest ready age ms,
-- counters (HGETALL's flat list), published, paused} with ages -1 when there is none; paused
-- is 1 for a paused group.

local k = keys_at(TOPIC_KEYS + 1)
local now = now_ms()
local function age(since)
  if not since then return -1 end
  return math.max(0, now - since)
end
local ready, delayed, ready_since, staged = store_counts(k, now, tonumber(ARGV[2]))
local first = redis.call('ZRANGE', k.since, 0, 0, 'WITHSCORES')
local seq = tonumber(redis.call('HGET', k.meta, 'seq') or '0')
local from, paused = reg_parse(redis.call('HGET', k.registry, ARGV[1]))
local published = 0
if from then published = seq - from end
return {ready, delayed, redis.call('ZCARD', k.pending) + staged, redis.call('ZCARD', k.dead),
  age(first[2] and tonumber(first[2])), age(ready_since), redis.call('HGETALL', k.counters), published,
  paused and 1 or 0}
