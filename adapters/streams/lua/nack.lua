-- nack.lua: return held deliveries of a group for a retry after a delay, release them, or
-- dead-letter them. Fenced: an item counts only where the consumer holds that attempt (it
-- owns the PEL entry and its delivery count is the attempt).
--
-- A retry parks the entry (the parking consumer owns it, XCLAIM ... JUSTID keeps the count)
-- and schedules it in the retry ZSET at now + delay: the delivery ID is kept, and the next
-- claim counts the next attempt. A retry without a delay is due at its publish time, so it
-- keeps its place before the entries published after it, as on list and zset. A release parks it with the count taken back
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
-- KEYS[8] -> dead_order (ZSET) the group's dead letters in order, for paging
-- KEYS[9] -> wake (STREAM) the group's wake-up stream
-- ARGV[1] -> group
-- ARGV[2] -> consumer nacking
-- ARGV[3] -> the parking consumer's name
-- ARGV[4] -> max deliveries (0: no limit)
-- ARGV[5] -> topic (recorded with dead letters)
-- ARGV[6+5i .. 10+5i] -> item i: id, attempt, delay ms, mode (0 retry, 1 dead-letter, 2 release), reason
-- Per call: one XPENDING of the consumer's entries (see pel_of), one XCLAIM for the retries
-- and one per attempt among the releases, one ZADD of schedules, one ZREM of pending_at; a
-- dead letter costs its own XRANGE and XADD; one XADD wakes blocked claims when it parked any.
-- Returns {requeued, dead_lettered, stale}. On a group that is not registered every item is
-- stale and nothing is written.

local k = {stream = KEYS[1], retry = KEYS[2], counters = KEYS[3], pending = KEYS[4],
  dead = KEYS[5], dead_index = KEYS[6], dead_refs = KEYS[7], dead_order = KEYS[8], wake = KEYS[9],
  group = ARGV[1], parked = ARGV[3], topic = ARGV[5]}
drain_ok(k.counters)
local consumer, max = ARGV[2], tonumber(ARGV[4])
local now = now_ms()
local ids = {}
for i = 6, #ARGV, 5 do ids[#ids + 1] = ARGV[i] end
local pel, gone = pel_of(k, ids, consumer)
if gone then return {0, 0, #ids} end

local stale, nacked = 0, 0
local held, seen = {}, {}
local retry_ids, retry_at = {}, {}
local releases = {} -- attempt - 1 -> {ids, scores}
local dead = {}
for i = 6, #ARGV, 5 do
  local id, attempt, delay, mode, reason = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4]
  local p = pel[id]
  if seen[id] or not p or p[1] ~= consumer or p[2] ~= attempt then
    stale = stale + 1
  else
    seen[id] = true
    held[#held + 1] = id
    if mode == '2' then
      local r = releases[attempt - 1] or {{}, {}}
      releases[attempt - 1] = r
      r[1][#r[1] + 1] = id
      r[2][#r[2] + 1] = published_at(id, now)
    else
      nacked = nacked + 1
      if mode == '1' or (max > 0 and attempt >= max) then
        if reason == '' then reason = 'nacked after ' .. attempt .. ' attempts' end
        dead[#dead + 1] = {id, attempt, reason}
      else
        retry_ids[#retry_ids + 1] = id
        retry_at[#retry_at + 1] = delay > 0 and now + delay or published_at(id, now)
      end
    end
  end
end
local parked = park(k, retry_ids, retry_at)
for count, r in pairs(releases) do parked = parked + park(k, r[1], r[2], count) end
if parked > 0 then wake(k) end
bury(k, dead, now)
if parked > 0 or #dead > 0 then keep_ttl(k, {k.retry, k.wake, k.dead, k.dead_index, k.dead_order, k.dead_refs}) end
call_ids('ZREM', k.pending, {}, held)
if nacked > 0 then redis.call('HINCRBY', k.counters, 'nacked', nacked) end
if #dead > 0 then redis.call('HINCRBY', k.counters, 'dead_lettered', #dead) end
if stale > 0 then redis.call('HINCRBY', k.counters, 'stale_nacks', stale) end
return {#held - #dead, #dead, stale}
