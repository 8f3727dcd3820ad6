-- extend.lua: heartbeat. Reset the PEL idle time of held deliveries (XCLAIM to the holder
-- itself, min-idle 0, JUSTID: neither owner nor delivery count changes), so that their lease,
-- the idle time measured against the consumer's lease, starts again. Fenced: only where the
-- consumer holds that attempt.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> leases (HASH consumer -> lease ms) the group's
-- ARGV[1] -> group
-- ARGV[2] -> consumer
-- ARGV[3] -> lease in ms
-- ARGV[4+2i], ARGV[5+2i] -> item i: id, attempt
-- Per call: one XPENDING of the consumer's entries (see pel_of) and one XCLAIM.
-- Returns the ids the consumer no longer holds: all of them, with nothing written, on a group
-- that is not registered.

local k = {stream = KEYS[1], leases = KEYS[2], group = ARGV[1]}
drain_ok(k.leases)
local consumer = ARGV[2]
local ids = {}
for i = 4, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local pel, gone = pel_of(k, ids, consumer)
if gone then return ids end
local held, added = {}, {}
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  local p = pel[id]
  if p and not added[id] and p[1] == consumer and p[2] == tonumber(ARGV[i + 1]) then
    held[#held + 1] = id
    added[id] = true
  end
end
-- The lease record only for a consumer that still holds something: reclaim may have
-- deleted one whose entries it parked, and nothing would remove a record written for it.
if #held > 0 then
  redis.call('HSET', k.leases, consumer, ARGV[3])
  keep_ttl(k, {k.leases})
end
local kept = {}
for _, id in ipairs(call_ids('XCLAIM', k.stream, {k.group, consumer, 0}, held, {'JUSTID'})) do
  kept[id] = true
end
local lost = {}
for _, id in ipairs(ids) do
  if not kept[id] then lost[#lost + 1] = id end
end
return lost
