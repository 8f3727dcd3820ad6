-- extend.lua (list and zset): push the lease deadline of held deliveries to now + lease.
-- Fenced: only where the consumer holds that attempt (an expired lease not yet reclaimed is
-- still held).
--
-- KEYS[1] -> leases (ZSET id -> deadline, ms)
-- KEYS[2] -> holders (HASH id -> consumer)
-- KEYS[3] -> attempts (HASH id -> attempt)
-- ARGV[1] -> consumer
-- ARGV[2] -> lease in ms
-- ARGV[2i+1], ARGV[2i+2] -> item i: id, attempt
-- Returns the ids the consumer no longer holds.

local k = {leases = KEYS[1], holders = KEYS[2], attempts = KEYS[3]}
local consumer = ARGV[1]
local deadline = now_ms() + tonumber(ARGV[2])
local lost = {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  if holds(k, id, consumer, ARGV[i + 1]) then
    redis.call('ZADD', k.leases, 'XX', deadline, id)
  else
    lost[#lost + 1] = id
  end
end
return lost
