-- publish.lua: store a batch of messages of one topic and route each to every registered
-- group, or to the topic's backlog while it has none.
--
-- Fan-out keys are declared, never built here: the caller passes the registry version it has
-- cached with those groups' keys. When the version differs the script writes nothing and
-- returns the registry, and the caller retries with it. With no group registered the caller
-- passes none, and the messages go to the backlog, which keeps at most the limit (a publish
-- beyond it drops the oldest, at most N + BACKLOG_TRIM of them per call, and frees their
-- bodies) and whose keys, with the topic's, expire the TTL after the last publish; the first
-- group registered takes it (lifecycle.lua's register).
--
-- A resent call (the client lost the reply and sent it again) stores nothing twice: each
-- call of one Backend runs on a lane, a meta field that holds "token:last" of the lane's last
-- call; a lane runs one call at a time, so a resend finds its own token there and returns the
-- same IDs. The record ("token:last:ms") is a field of meta, written by the same HSET that
-- advances seq.
--
-- KEYS[1..8] -> the topic's keys (engine.lua's keys_at): meta (HASH: seq, ver, layout,
--   lanes, wake marks, backlog, backlog_dropped, expire), bodies (HASH id -> envelope), refs
--   (HASH id -> groups holding it, only for fan-out), registry (HASH group -> seq[:flags]),
--   legacy (the layout-1 registry, which must not exist), ephemeral, trash, tombs
-- KEYS[9 .. 8+S] -> the backlog's store keys (S of them, in STORE_KEY_NAMES order)
-- KEYS[9+S+S*i ..] -> group i's store keys
-- ARGV[1] -> the registry version the caller has cached ("0": none)
-- ARGV[2] -> the lane's meta field
-- ARGV[3] -> this call's token on the lane
-- ARGV[4] -> the backlog's limit (messages)
-- ARGV[5] -> the backlog's TTL in ms
-- ARGV[6] -> what a batch the backlog cannot hold does: '0' drops the backlog's oldest (counted
--            in meta's backlog_dropped), '1' refuses the batch (pubsub.BacklogRefuse)
-- ARGV[7] -> G, the number of groups passed
-- ARGV[8] -> G characters, '1' for each passed group the caller may restore (see restorable
--            below): a durable group of a registry it learned within the tombstones' life
-- ARGV[9 .. 8+G] -> the group names, in the order of their KEYS
-- ARGV[9+G] -> C, the number of candidates: durable groups the caller knew (within the
--            tombstones' life) that are not in its registry, because a registry it learned
--            since started afresh (its own subscription registered a group again first)
-- ARGV[10+G .. 9+G+2C] -> each candidate's name and the registry version it was last seen in
-- ARGV[10+G+2C+3j ..] -> message j: delay in ms (0: due now), priority, envelope bytes
-- Returns {1, last, version, trash, dropped, settled}, the IDs being last-N+1 .. last, trash
-- 1 when deleted groups' keys wait in the trash (drain.lua), dropped how many of the
-- backlog's oldest this call dropped, settled 1 when the caller passed candidates and none can
-- be restored (it forgets them); or {3} when the backlog refused the batch (nothing written);
-- or {0, version, reborn, groups...} when the caller's version is stale (nothing written); or
-- {2, groups...} when those ephemeral groups' members all expired (nothing written: the
-- caller deletes them and publishes again); or {4, groups...} when those groups the caller
-- knew vanished with the topic's state (nothing written: the caller registers them again,
-- regain.lua, and publishes again); or an error reply for a layout this code cannot read.

local BACKLOG_TRIM = 100

-- stale is the reply to a caller whose registry version is not ver.
local function stale(ver)
  local reply = registry_reply(KEYS[1], KEYS[4], ver)
  table.insert(reply, 1, 0)
  return reply
end

local S = #STORE_KEY_NAMES
local G = tonumber(ARGV[7])
local C = tonumber(ARGV[9 + G])

-- num reads a registry version (nil and foreign data: 0).
local function num(v) return tonumber(v) or 0 end

-- restorable lists the groups the caller may restore: durable groups it knew that are neither
-- registered nor tombstoned, and that the registry lost since the caller saw them registered
-- (at version seen): it started afresh after seen (meta's reborn: lifecycle.lua's register),
-- or holds a version older than seen (a failover to a replica that had not synced), or is
-- gone (missing). A durable group leaves the registry only through an operator's delete,
-- which leaves a tombstone; so one the caller learned within the tombstones' life and that
-- has none was not deleted. It vanished (a Redis that restarted empty, FLUSHALL, a failover): its running
-- subscriptions would register it again within a claim cycle, but what is published
-- meanwhile would reach only the groups registered again before.
local function restorable(missing, ver, reborn, now)
  local out = {}
  local function check(name, seen)
    if (missing or num(reborn) > num(seen) or num(ver) < num(seen))
        and redis.call('HEXISTS', KEYS[4], name) == 0 and not tombstoned(KEYS[8], name, now) then
      out[#out + 1] = name
    end
  end
  for g = 1, G do
    if string.sub(ARGV[8], g, g) == '1' then check(ARGV[8 + g], ARGV[1]) end
  end
  for c = 0, C - 1 do check(ARGV[10 + G + 2 * c], ARGV[11 + G + 2 * c]) end
  if #out > 0 then table.insert(out, 1, 4) end
  return out
end

local fields = {'ver', 'seq', ARGV[2], 'layout', 'expire', 'reborn'}
for g = 1, G do fields[#fields + 1] = 'w:' .. ARGV[8 + g] end
local meta = redis.call('HMGET', KEYS[1], unpack(fields))
local ver, seq, lane, expire = meta[1], topic_seq(meta[2]), meta[3], meta[5]
if lane then
  local token, last = string.match(lane, '^(%d+):(%d+)')
  -- The caller's own version: the registry may have changed since the call first ran, and
  -- the caller must not take the new version for the groups it routed to.
  if token == ARGV[3] then return {1, tonumber(last), ARGV[1], 0, 0} end
end
check_layout(meta[4])
if not ver and redis.call('EXISTS', KEYS[5]) == 1 then return layout_error(1) end
local now = now_ms()
local reborn = meta[6]
if redis.call('EXISTS', KEYS[4]) == 0 then
  -- The caller knew groups, and the registry is gone: durable groups leave it only through
  -- a delete, which leaves tombstones, or with every key of the topic.
  if G > 0 or C > 0 then
    local lost = restorable(true, ver, reborn, now)
    if #lost > 0 then return lost end
    if G > 0 then return {0, ver or '0', reborn or '0'} end
  end
else
  if not ver then
    -- Groups without a version (meta lost in a failover or deleted by hand): give the
    -- registry a version and let the caller route by it; nothing is stored yet.
    ver = new_version()
    redis.call('HSET', KEYS[1], 'ver', ver, 'layout', LAYOUT)
    return stale(ver)
  end
  if ver ~= ARGV[1] or C > 0 then
    local lost = restorable(false, ver, reborn, now)
    if #lost > 0 then return lost end
    if ver ~= ARGV[1] then return stale(ver) end
  end
  local expired = redis.call('ZRANGE', KEYS[6], '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, 10)
  if #expired > 0 then
    table.insert(expired, 1, 2)
    return expired
  end
end

local base = 10 + G + 2 * C
local n = (#ARGV - base + 1) / 3
local bk = store_keys_at(TOPIC_KEYS + 1)
if G == 0 and ARGV[6] == '1' and store_size(bk) + n > tonumber(ARGV[4]) then
  return {3} -- refused: the backlog cannot hold the batch, and nothing was written
end
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
local last = seq + n
local set = {'seq', last, ARGV[2], ARGV[3] .. ':' .. ms(last) .. ':' .. ms(now)}
local written = {KEYS[1], KEYS[2], KEYS[3]}
local dropped = 0
if G == 0 then
  store_push(bk, msgs, now, nil)
  local over = store_size(bk) - tonumber(ARGV[4])
  if over > 0 then
    local ids
    ids, dropped = store_drop(bk, math.min(over, n + BACKLOG_TRIM))
    unref({refs = KEYS[3], bodies = KEYS[2]}, ids)
    redis.call('HINCRBY', KEYS[1], 'backlog_dropped', dropped)
  end
  set[#set + 1] = 'backlog'
  set[#set + 1] = STORE_NAME
  for _, key in ipairs(bk.group) do written[#written + 1] = key end
else
  for g = 0, G - 1 do
    local gk = store_keys_at(TOPIC_KEYS + S + 1 + g * S)
    store_push(gk, msgs, now, meta[7 + g])
    for _, key in ipairs(gk.group) do written[#written + 1] = key end
  end
end
redis.call('HSET', KEYS[1], unpack(set))
if G == 0 then
  for _, key in ipairs(written) do redis.call('PEXPIRE', key, ARGV[5]) end
elseif expire then
  -- Every group is ephemeral: what this call wrote expires with the rest (join.lua).
  for _, key in ipairs(written) do redis.call('PEXPIREAT', key, expire) end
end
-- A process that dies leaves its lanes' records behind. A lane's first call sweeps a few
-- fields of meta for records no call touched for LANE_IDLE_MS (no resend comes that late).
if ARGV[3] == '1' then sweep_lanes(KEYS[1], now) end
return {1, last, ver or '0', redis.call('EXISTS', KEYS[7]), dropped, C > 0 and 1 or 0}
