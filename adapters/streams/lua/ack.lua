-- ack.lua: acknowledge deliveries of a group, from any holder (the work is done), and with
-- delete-on-ack retention delete the entries no group needs any more.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> retry (ZSET) the group's
-- KEYS[3] -> counters (HASH) the group's
-- KEYS[4] -> pending_at (ZSET) the group's
-- KEYS[5] -> dead_refs (HASH id -> groups keeping it as a dead letter) the topic's
-- ARGV[1] -> group
-- ARGV[2] -> consumer acking
-- ARGV[3] -> '1': delete entries once every group has acked them
-- ARGV[4+2i], ARGV[5+2i] -> item i: id, attempt the consumer believes it holds
-- Per call: one XPENDING of the consumer's entries (see pel_of), one XACK, one ZREM of
-- pending_at, and a ZREM of retry schedules only for items another consumer held (the
-- parking consumer holds the retries; what the acking consumer holds has no schedule).
-- Returns {acked, stale}. An item is stale when it is not pending (acked already, or
-- dead-lettered) or when the consumer no longer holds that attempt (another consumer or the
-- parking consumer has it); a pending stale item is still acked. On a group that is not
-- registered every item is stale and nothing is written: no key of a deleted group comes back.

local k = {stream = KEYS[1], retry = KEYS[2], counters = KEYS[3], pending = KEYS[4],
  dead_refs = KEYS[5], group = ARGV[1]}
drain_ok(k.counters)
local consumer = ARGV[2]
local ids = {}
for i = 4, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local pel, gone = pel_of(k, ids, consumer)
if gone then return {0, #ids} end

local stale = 0
local done, others, seen = {}, {}, {}
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  local p = pel[id]
  if p and not seen[id] then
    seen[id] = true
    if p[1] ~= consumer or p[2] ~= tonumber(ARGV[i + 1]) then stale = stale + 1 end
    done[#done + 1] = id
    if p[1] ~= consumer then others[#others + 1] = pad(id) end
  else
    stale = stale + 1
  end
end
if #done > 0 then
  call_ids('XACK', k.stream, {k.group}, done)
  call_ids('ZREM', k.pending, {}, done)
  call_ids('ZREM', k.retry, {}, others)
  if ARGV[3] == '1' then
    -- This group just acked them; the other groups decide.
    local groups = {}
    for _, g in ipairs(groups_of(k)) do
      if g.name ~= k.group then groups[#groups + 1] = g end
    end
    xdel(k, unneeded(k, done, groups))
  end
  redis.call('HINCRBY', k.counters, 'acked', #done)
end
if stale > 0 then redis.call('HINCRBY', k.counters, 'stale_acks', stale) end
return {#done, stale}
