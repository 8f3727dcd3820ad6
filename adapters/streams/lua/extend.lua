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
-- Returns the ids the consumer no longer holds.

local k = {stream = KEYS[1], leases = KEYS[2], group = ARGV[1]}
local consumer = ARGV[2]
redis.call('HSET', k.leases, consumer, ARGV[3])
local lost = {}
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  local owner, count = pending(k, id)
  local held = owner == consumer and count == tonumber(ARGV[i + 1])
  if not held or not redis.call('XCLAIM', k.stream, k.group, consumer, 0, id, 'JUSTID')[1] then
    lost[#lost + 1] = id
  end
end
return lost
