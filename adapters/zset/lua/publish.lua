-- publish.lua: store a batch of messages of one topic and route each to every registered group's
-- ready ZSET, scored with its due time: now (Redis TIME, one for the whole batch) + its delay.
--
-- Fan-out keys are declared, never built here: the caller passes the group list it believes is
-- registered (cached) with each group's keys. The script checks that list against the registry
-- and, when it differs, writes nothing and returns the registry so the caller retries with the
-- right keys. With no group registered, the caller's list must be exactly {default}, which is
-- then registered, so nothing published is dropped.
--
-- KEYS[1] -> {p:t}:seq          delivery ID counter (INCRBY)
-- KEYS[2] -> {p:t}:bodies       HASH id -> envelope bytes
-- KEYS[3] -> {p:t}:refs         HASH id -> groups still holding the body, written only when
--                               there is more than one (a missing count means one)
-- KEYS[4] -> {p:t}:groups       SET of registered groups
-- KEYS[5] -> {p:t}:priorities   HASH id -> priority, for priorities other than 0
-- KEYS[6+3i .. 8+3i] -> group i's ready (ZSET), wake (LIST of wake-up tokens), counters (HASH)
-- KEYS[#KEYS] -> {p:t}:batch:<uuid>, this publish's idempotency key (STRING, 1 min TTL)
-- ARGV[1] -> the default group's name
-- ARGV[2] -> G, the number of groups the caller passes
-- ARGV[3 .. 2+G] -> the group names, in the order of their KEYS
-- ARGV[3+G+3j .. 5+G+3j] -> message j: delay in ms (0 = due now), priority (clamped by the
--   caller), envelope bytes
-- Returns {1, last} where the IDs are last-N+1 .. last, or {0, registered groups...} when the
-- caller's group list is stale (nothing written).

local reply, b = begin_publish(3)
if reply then return reply end
local ng, base, n, now = b.ng, b.base, b.n, b.now
-- Gathered first, then written with one command per key (per slice of a large batch).
local bodies, prios, ready = {}, {}, {}
for j = 0, n - 1 do
  local id = string.format('%d', b.last - n + 1 + j)
  local a = base + 3 * j
  local p = tonumber(ARGV[a + 1])
  bodies[#bodies + 1] = id
  bodies[#bodies + 1] = ARGV[a + 2]
  if p ~= 0 then
    prios[#prios + 1] = id
    prios[#prios + 1] = p
  end
  ready[#ready + 1] = now + tonumber(ARGV[a])
  ready[#ready + 1] = member(id, p)
end
store_bodies(KEYS[2], KEYS[3], bodies, ng)
if #prios > 0 then call_chunked('HSET', KEYS[5], prios, 2) end
for g = 0, ng - 1 do
  call_chunked('ZADD', KEYS[6 + 3 * g], ready, 2)
  wake(KEYS[7 + 3 * g])
  redis.call('HINCRBY', KEYS[8 + 3 * g], 'published', n)
end
return end_publish(b)
