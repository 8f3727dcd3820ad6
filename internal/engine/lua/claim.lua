-- claim.lua: claim up to N ready messages of a group under a lease, from the store.
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> consumer
-- ARGV[2] -> N, the most messages to claim
-- ARGV[3] -> lease in ms
-- ARGV[4] -> the most delayed messages the store may promote on the way (list: to ready;
--            zset: due members of ready to the priority queue)
-- ARGV[5] -> the group's name
-- ARGV[6] -> how long the caller will wait for a wake-up if nothing is ready, in ms
-- Returns {wait, id1, attempt1, body1, id2, ...}. wait is -1 when something was claimed; else
-- the ms until the store's earliest scheduled message is due (0: now), or -1 when nothing is
-- scheduled; PAUSED (-2) when the group is paused. A group that is not registered gets the
-- error reply gone().

local k = keys_at(TOPIC_KEYS + 1)
local _, paused, ephemeral = reg_parse(redis.call('HGET', k.registry, ARGV[5]))
if paused == nil then return gone(k, ARGV[5]) end
if paused then return {PAUSED} end
local consumer, n = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local out = {-1}
local ids, extras = store_take(k, n, now, tonumber(ARGV[4]))
local got = lease(k, ids, extras, consumer, now, now + tonumber(ARGV[3]), out)
if got > 0 then
  count(k, 'claimed', got)
  store_claimed(k, #ids == n, now, ARGV[5])
  if ephemeral then keep_expiry(k) end
elseif #ids > 0 then
  out[1] = 0 -- what was taken had no body and is gone: look again at once
else
  out[1] = store_wait(k, now, ARGV[5], tonumber(ARGV[6]))
end
return out
