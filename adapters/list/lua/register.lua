-- register.lua: lease an id that BLMOVE moved ready -> processing, then claim up to N-1 more.
--
-- Between BLMOVE and this script the id sits in processing without a lease. Reclaim may have
-- given it an orphan lease (no holder) meanwhile: that one is taken over. If the id has a
-- holder, or has left processing (an orphan lease expired and it went back to ready), it is
-- someone else's now and is not returned.
--
-- KEYS[1] -> ready (LIST)        KEYS[5] -> holders (HASH)      KEYS[8] -> counters (HASH)
-- KEYS[2] -> processing (LIST)   KEYS[6] -> attempts (HASH)     KEYS[9] -> {p:t}:bodies (HASH)
-- KEYS[3] -> ready_at (ZSET)     KEYS[7] -> pending_at (ZSET)
-- KEYS[4] -> leases (ZSET)
-- ARGV[1] -> consumer
-- ARGV[2] -> N, the most messages to return, the BLMOVEd one included
-- ARGV[3] -> lease in ms
-- ARGV[4] -> the id BLMOVE returned
-- Returns {-1, id1, attempt1, body1, ...}, like claim.lua.

local k = {ready = KEYS[1], processing = KEYS[2], readyat = KEYS[3], leases = KEYS[4],
  holders = KEYS[5], attempts = KEYS[6], pending = KEYS[7], counters = KEYS[8], bodies = KEYS[9]}
local consumer, id = ARGV[1], ARGV[4]
local now = now_ms()
local deadline = now + tonumber(ARGV[3])
local out = {-1}
local got = 0
if redis.call('LPOS', k.processing, id) and not redis.call('HGET', k.holders, id) then
  local body = redis.call('HGET', k.bodies, id)
  if body then
    out[2], out[3], out[4] = id, lease(k, id, consumer, now, deadline), body
    got = 1
  else
    forget(k, id)
  end
end
got = got + take(k, consumer, tonumber(ARGV[2]) - got, now, deadline, out)
if got > 0 then redis.call('HINCRBY', k.counters, 'claimed', got) end
return out
