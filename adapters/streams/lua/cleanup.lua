-- cleanup.lua: remove a group's consumers idle for a while without dropping their pending
-- entries (XGROUP DELCONSUMER drops a consumer's PEL entries): each one's entries idle that
-- long are parked first (XCLAIM ... JUSTID, no attempt counted) and due at once; a consumer is
-- removed once nothing is pending for it.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET) the group's
-- KEYS[3] -> pending_at (ZSET) the group's
-- KEYS[4] -> leases (HASH) the group's
-- KEYS[5] -> wake (STREAM) the group's wake-up stream
-- KEYS[6] -> reclaim_from (HASH consumer -> PEL entry ID) the group's
-- KEYS[7] -> counters (HASH) the group's
-- KEYS[8..11] -> dead (STREAM), dead_index (HASH), dead_refs (HASH, the topic's), dead_order
--                (ZSET): the dead-letter store, for entries gone from the stream (see park)
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> idle ms: consumers and entries idle at least this long
-- ARGV[4] -> N, the most entries parked in this call
-- ARGV[5] -> topic (recorded with dead letters)
-- Returns {consumers removed, entries parked, 1 if the bound stopped it, else 0}.

local k = {stream = KEYS[1], retry = KEYS[2], pending = KEYS[3], leases = KEYS[4],
  wake = KEYS[5], reclaim_from = KEYS[6], counters = KEYS[7], dead = KEYS[8], dead_index = KEYS[9],
  dead_refs = KEYS[10], dead_order = KEYS[11], group = ARGV[1], parked = ARGV[2], topic = ARGV[5]}
drain_ok(k.leases)
local idle, left = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
local consumers = redis.pcall('XINFO', 'CONSUMERS', k.stream, k.group)
if type(consumers) ~= 'table' or consumers.err then return {0, 0, 0} end

local removed, moved = 0, 0
for _, c in ipairs(consumers) do
  local t = {}
  for i = 1, #c, 2 do t[c[i]] = c[i + 1] end
  local name = t['name']
  if name ~= k.parked and tonumber(t['idle']) >= idle then
    if tonumber(t['pending']) > 0 and left > 0 then
      local ids, at = {}, {}
      for _, e in ipairs(redis.call('XPENDING', k.stream, k.group, 'IDLE', idle, '-', '+', left, name)) do
        ids[#ids + 1] = e[1]
        at[#at + 1] = published_at(e[1], now)
      end
      left = left - #ids
      moved = moved + park(k, ids, at)
      call_ids('ZREM', k.pending, {}, ids)
    end
    if not redis.call('XPENDING', k.stream, k.group, '-', '+', 1, name)[1] then
      redis.call('XGROUP', 'DELCONSUMER', k.stream, k.group, name)
      redis.call('HDEL', k.leases, name)
      redis.call('HDEL', k.reclaim_from, name)
      removed = removed + 1
    end
  end
end
if moved > 0 then
  wake(k)
  keep_ttl(k, {k.retry, k.wake, k.dead, k.dead_index, k.dead_order, k.dead_refs})
end
return {removed, moved, left <= 0 and 1 or 0}
