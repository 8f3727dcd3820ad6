-- register.lua: lease an id that BLMOVE moved ready -> processing, then claim up to N-1 more.
--
-- Between BLMOVE and this script the id sits in processing without a lease. Reclaim may have
-- given it an orphan lease (holder ":since", nobody) meanwhile: that one is taken over, its
-- pending-since time kept. If the id has a
-- holder, or has left processing (an orphan lease expired and it went back to ready), it is
-- someone else's now and is not returned.
--
-- BLMOVE moved a ready entry "id@ms"; it is replaced in place by the bare id. If reclaim already
-- did that (giving an orphan lease), the bare id is looked for instead.
--
-- KEYS[1] -> ready (LIST)        KEYS[4] -> holders (HASH)      KEYS[7] -> {p:t}:bodies (HASH)
-- KEYS[2] -> processing (LIST)   KEYS[5] -> attempts (HASH)
-- KEYS[3] -> leases (ZSET)       KEYS[6] -> counters (HASH)
-- ARGV[1] -> consumer
-- ARGV[2] -> N, the most messages to return, the BLMOVEd one included
-- ARGV[3] -> lease in ms
-- ARGV[4] -> the entry BLMOVE returned
-- Returns {-1, id1, attempt1, body1, ...}, like claim.lua.

local k = {ready = KEYS[1], processing = KEYS[2], leases = KEYS[3], holders = KEYS[4],
  attempts = KEYS[5], counters = KEYS[6], bodies = KEYS[7]}
local consumer, moved = ARGV[1], ARGV[4]
local id = split(moved)
local at = redis.call('LPOS', k.processing, moved)
if at and id ~= moved then redis.call('LSET', k.processing, at, id) end
if not at and id ~= moved then at = redis.call('LPOS', k.processing, id) end
local now = now_ms()
local deadline = now + tonumber(ARGV[3])
local out = {-1}
local got = 0
local held = at and redis.call('HGET', k.holders, id)
if at and (not held or holder(held) == '') then
  local body = redis.call('HGET', k.bodies, id)
  if body then
    out[2], out[3], out[4] = id, lease(k, id, consumer, now, deadline, since_of(held)), body
    got = 1
  else
    forget(k, id)
  end
end
got = got + take(k, consumer, tonumber(ARGV[2]) - got, now, deadline, out)
if got > 0 then redis.call('HINCRBY', k.counters, 'claimed', got) end
return out
