-- publish.lua: store a batch of messages of one topic and route each to every registered group.
--
-- Fan-out keys are declared, never built here: the caller passes the registry version it has
-- cached with those groups' keys. When the version differs the script writes nothing and
-- returns the registry, and the caller retries with it. A topic with no group yet registers
-- the default group, so nothing published is dropped.
--
-- A resent call (the client lost the reply and sent it again) stores nothing twice: each
-- call of one Backend runs on a lane, a meta field that holds "token:last" of the lane's last
-- call; a lane runs one call at a time, so a resend finds its own token there and returns the
-- same IDs. The record ("token:last:ms") is a field of meta, written by the same HSET that
-- advances seq.
--
-- KEYS[1..5] -> the topic's meta (HASH: seq, ver, layout, lanes, wake marks), bodies (HASH id
--   -> envelope), refs (HASH id -> groups holding it, only for fan-out), registry (HASH group
--   -> seq when it registered), legacy (the layout-1 registry, which must not exist)
-- KEYS[6 + S*i ..] -> group i's store keys (S of them, in STORE_KEY_NAMES order)
-- ARGV[1] -> the default group's name
-- ARGV[2] -> the registry version the caller has cached ("0": none)
-- ARGV[3] -> the lane's meta field
-- ARGV[4] -> this call's token on the lane
-- ARGV[5] -> G, the number of groups passed
-- ARGV[6 .. 5+G] -> the group names, in the order of their KEYS
-- ARGV[6+G+3j .. 8+G+3j] -> message j: delay in ms (0: due now), priority, envelope bytes
-- Returns {1, last, version}, the IDs being last-N+1 .. last; or {0, version, groups...}
-- when the caller's version is stale (nothing written); or an error reply for a layout this
-- code cannot read.

local G = tonumber(ARGV[5])
local fields = {'ver', 'seq', ARGV[3], 'layout'}
for g = 1, G do fields[#fields + 1] = 'w:' .. ARGV[5 + g] end
local meta = redis.call('HMGET', KEYS[1], unpack(fields))
local ver, seq, lane = meta[1], tonumber(meta[2] or '0'), meta[3]
if lane then
  local token, last = string.match(lane, '^(%d+):(%d+)')
  -- The caller's own version: the registry may have changed since the call first ran, and
  -- the caller must not take the new version for the groups it routed to.
  if token == ARGV[4] then return {1, tonumber(last), ARGV[2]} end
end
check_layout(meta[4])
local registered = {}
if not ver then
  if redis.call('EXISTS', KEYS[5]) == 1 then return layout_error(1) end
  local groups = redis.call('HKEYS', KEYS[4])
  if #groups > 0 then
    -- Groups without a version (meta lost in a failover or deleted by hand): give the
    -- registry a version and let the caller route by it; nothing is stored yet.
    ver = new_version()
    redis.call('HSET', KEYS[1], 'ver', ver, 'layout', LAYOUT)
    local reply = {0, ver}
    for _, g in ipairs(groups) do reply[#reply + 1] = g end
    return reply
  end
  if G ~= 1 or ARGV[6] ~= ARGV[1] or ARGV[2] ~= '0' then
    return {0, '0'}
  end
  redis.call('HSET', KEYS[4], ARGV[1], seq)
  ver = new_version()
  registered = {'ver', ver, 'layout', LAYOUT}
elseif ver ~= ARGV[2] then
  local reply = {0, ver}
  for _, g in ipairs(redis.call('HKEYS', KEYS[4])) do reply[#reply + 1] = g end
  return reply
end

local base = 6 + G
local n = (#ARGV - base + 1) / 3
local now = now_ms()
local msgs, bodies = {}, {}
for j = 0, n - 1 do
  local id = ms(seq + 1 + j)
  local a = base + 3 * j
  msgs[j + 1] = {id = id, delay = tonumber(ARGV[a]), prio = tonumber(ARGV[a + 1])}
  bodies[#bodies + 1] = id
  bodies[#bodies + 1] = ARGV[a + 2]
end
call_chunked('HSET', KEYS[2], bodies, 2)
if G > 1 then
  local refs = {}
  for _, m in ipairs(msgs) do
    refs[#refs + 1] = m.id
    refs[#refs + 1] = G
  end
  call_chunked('HSET', KEYS[3], refs, 2)
end
for g = 0, G - 1 do
  store_push(store_keys_at(TOPIC_KEYS + 1 + g * #STORE_KEY_NAMES), msgs, now, meta[5 + g])
end
local last = seq + n
redis.call('HSET', KEYS[1], 'seq', last, ARGV[3], ARGV[4] .. ':' .. ms(last) .. ':' .. ms(now), unpack(registered))
-- A process that dies leaves its lanes' records behind. A lane's first call sweeps a few
-- fields of meta for records no call touched for LANE_IDLE_MS (no resend comes that late).
if ARGV[4] == '1' then sweep_lanes(KEYS[1], now) end
return {1, last, ver}
