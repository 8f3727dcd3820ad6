-- publish.lua: store a batch of messages of one topic and route each to every registered group.
--
-- Fan-out keys are declared, never built here: the caller passes the group list it believes is
-- registered (cached) with each group's keys. The script checks that list against the registry
-- and, when it differs, writes nothing and returns the registry so the caller retries with the
-- right keys. With no group registered, the caller's list must be exactly {default}, which is
-- then registered, so nothing published is dropped.
--
-- KEYS[1] -> {p:t}:seq        delivery ID counter (INCRBY)
-- KEYS[2] -> {p:t}:bodies     HASH id -> envelope bytes
-- KEYS[3] -> {p:t}:refs       HASH id -> groups still holding the body, written only when
--                             there is more than one (a missing count means one)
-- KEYS[4] -> {p:t}:groups     SET of registered groups
-- KEYS[5+3i .. 7+3i] -> group i's ready (LIST of "id@ms"), delayed (ZSET), counters (HASH)
-- KEYS[#KEYS] -> {p:t}:batch:<uuid>, this publish's idempotency key (STRING, 1 min TTL)
-- ARGV[1] -> the default group's name
-- ARGV[2] -> G, the number of groups the caller passes
-- ARGV[3 .. 2+G] -> the group names, in the order of their KEYS
-- ARGV[3+G+2j], ARGV[4+G+2j] -> message j: delay in ms (0 = due now), envelope bytes
-- Returns {1, last} where the IDs are last-N+1 .. last, or {0, registered groups...} when the
-- caller's group list is stale (nothing written).

local reply, b = begin_publish(2)
if reply then return reply end
local ng, base, n, now = b.ng, b.base, b.n, b.now
-- Gathered first, then written with one command per key (per slice of a large batch).
local bodies, ready, delayed = {}, {}, {}
for j = 0, n - 1 do
  local id = string.format('%d', b.last - n + 1 + j)
  local delay = tonumber(ARGV[base + 2 * j])
  bodies[#bodies + 1] = id
  bodies[#bodies + 1] = ARGV[base + 2 * j + 1]
  if delay > 0 then
    delayed[#delayed + 1] = now + delay
    delayed[#delayed + 1] = id
  else
    ready[#ready + 1] = entry(id, now)
  end
end
store_bodies(KEYS[2], KEYS[3], bodies, ng)
for g = 0, ng - 1 do
  local kb = 5 + 3 * g
  if #ready > 0 then call_chunked('LPUSH', KEYS[kb], ready, 1) end
  if #delayed > 0 then call_chunked('ZADD', KEYS[kb + 1], delayed, 2) end
  redis.call('HINCRBY', KEYS[kb + 2], 'published', n)
end
return end_publish(b)
