-- nack.lua: return held deliveries of a group for a retry after a delay, release them, or
-- dead-letter them. Fenced: an item counts only where the consumer holds that attempt (it
-- owns the PEL entry and its delivery count is the attempt).
--
-- A retry parks the entry (the parking consumer owns it, XCLAIM ... JUSTID keeps the count)
-- and schedules it in the retry ZSET at now + delay: the delivery ID is kept, and the next
-- claim counts the next attempt. A release parks it with the count taken back
-- (RETRYCOUNT attempt-1), due at its publish time, so it is claimed first. A dead letter
-- moves to the dead-letter stream atomically with its XACK.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET) the group's
-- KEYS[3] -> counters (HASH) the group's
-- KEYS[4] -> pending_at (ZSET) the group's
-- KEYS[5] -> dead (STREAM) the group's dead letters
-- KEYS[6] -> dead_index (HASH id -> dead-letter entry id) the group's
-- KEYS[7] -> dead_refs (HASH) the topic's
-- ARGV[1] -> group
-- ARGV[2] -> consumer nacking
-- ARGV[3] -> the parking consumer's name
-- ARGV[4] -> max deliveries (0: no limit)
-- ARGV[5] -> topic (recorded with dead letters)
-- ARGV[6+5i .. 10+5i] -> item i: id, attempt, delay ms, mode (0 retry, 1 dead-letter, 2 release), reason
-- Returns {requeued, dead_lettered, stale}.

local k = {stream = KEYS[1], retry = KEYS[2], counters = KEYS[3], pending = KEYS[4],
  dead = KEYS[5], dead_index = KEYS[6], dead_refs = KEYS[7], group = ARGV[1], parked = ARGV[3],
  topic = ARGV[5]}
local consumer, max = ARGV[2], tonumber(ARGV[4])
local now = now_ms()
local requeued, buried, stale, nacked = 0, 0, 0, 0
for i = 6, #ARGV, 5 do
  local id, attempt, delay, mode, reason = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4]
  local owner, count = pending(k, id)
  if owner ~= consumer or count ~= attempt then
    stale = stale + 1
  elseif mode == '2' then
    park(k, id, published_at(id, now), attempt - 1)
    requeued = requeued + 1
  else
    nacked = nacked + 1
    if mode == '1' or (max > 0 and attempt >= max) then
      if reason == '' then reason = 'nacked after ' .. attempt .. ' attempts' end
      bury(k, id, attempt, reason, now)
      buried = buried + 1
    else
      park(k, id, now + delay)
      requeued = requeued + 1
    end
  end
end
if nacked > 0 then redis.call('HINCRBY', k.counters, 'nacked', nacked) end
if buried > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', buried) end
if stale > 0 then redis.call('HINCRBY', k.counters, 'stale_nacks', stale) end
return {requeued, buried, stale}
