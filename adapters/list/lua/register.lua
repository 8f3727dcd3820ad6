-- register.lua: lease the entry that BLMOVE moved ready -> processing, then claim up to N-1
-- more like claim.lua.
--
-- Between BLMOVE and this script the entry sits in processing without a lease. Reclaim may
-- have given it an orphan lease meanwhile (a holders record with no consumer): that one is
-- taken over as the next attempt, its pending-since time kept. If it has a consumer, or is gone
-- (an orphan lease expired and it went back to ready), it is someone else's now and is not
-- returned; but a record of this consumer's own is this script's, run before by a call whose
-- reply was lost (the caller sends it again), and the entry is returned again as it was
-- leased. processing holds only entries in that window, so LREM finds it near the head.
--
-- The entry may be WAKE (store.lua), which is no message: it is dropped, and the script claims
-- like claim.lua; the caller's next claim learns the due time WAKE was pushed for.
--
-- A paused group's entry goes back to the consume end of ready, where BLMOVE took it from,
-- and nothing is returned (PAUSED); a group that is not registered gets the error reply gone()
-- (its keys, processing included, went with its deletion).
--
-- KEYS -> the topic's 8 keys, then the group's (internal/engine's keys_at)
-- ARGV[1] -> consumer
-- ARGV[2] -> N, the most messages to return, the BLMOVEd one included
-- ARGV[3] -> lease in ms
-- ARGV[4] -> the entry BLMOVE returned
-- ARGV[5] -> the group's name
-- Returns {-1, id1, attempt1, body1, ...}, like claim.lua, or {PAUSED}.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local _, paused, ephemeral = reg_parse(redis.call('HGET', k.registry, ARGV[5]))
if paused == nil then return gone(k, ARGV[5]) end
local wake = ARGV[4] == WAKE
if wake then redis.call('LREM', k.processing, 1, WAKE) end
if paused then
  if not wake and redis.call('LREM', k.processing, 1, ARGV[4]) == 1 then redis.call('RPUSH', k.ready, ARGV[4]) end
  keep_expiry(k) -- the put-back may have created ready again
  return {PAUSED}
end
local consumer, n = ARGV[1], tonumber(ARGV[2])
local id = split(ARGV[4])
local now = now_ms()
local deadline = now + tonumber(ARGV[3])
local out = {-1}
local got = 0
if wake then
  got = 0
elseif redis.call('LREM', k.processing, 1, ARGV[4]) == 1 then
  got = lease(k, {id}, nil, consumer, now, deadline, out)
else
  local r = read_records(k, {id})[1]
  if r and r.consumer == consumer then
    out[2], out[3], out[4] = id, r.attempt, redis.call('HGET', k.bodies, id) or false
    got = 1
  elseif r and r.consumer == '' then
    -- A missing body is returned as nil, as lease does, for the subscriber to dead-letter.
    pend(k, {{id = id, consumer = consumer, attempt = r.attempt + 1, since = r.since, extra = r.extra}}, deadline)
    out[2], out[3], out[4] = id, r.attempt + 1, redis.call('HGET', k.bodies, id) or false
    got = 1
  end
end
if n > got then
  local ids = store_take(k, n - got, now, 0)
  got = got + lease(k, ids, nil, consumer, now, deadline, out)
end
count(k, 'claimed', got)
if ephemeral then keep_expiry(k) end
return out
