-- deletegroup.lua: unregister a group and free what it held (Admin.DeleteGroup, the last
-- Leave of an ephemeral group, the sweep of an expired one).
--
-- Unregistering comes first: publishes stop routing to the group (a new registry version),
-- its claims fail, and a new group of the name starts empty. An operator's delete (mode any)
-- leaves a tombstone for ARGV[6] ms (common.lua), so that the group's running subscriptions
-- stop rather than register it again; an ephemeral group's end leaves none. When it was the topic's last
-- group every key of the topic goes (UNLINK). Otherwise up to N of its ids are freed here
-- (each body with its last group); what is left is RENAMEd to the trash keys and listed in
-- the topic's trash, which drain.lua frees in steps of N.
--
-- KEYS -> the topic's 8 keys, the group's (engine.lua's keys_at), then the trash keys, in the
--         same layout as the group's
-- ARGV[1] -> group
-- ARGV[2] -> mode: any (Admin.DeleteGroup); expired (only an ephemeral group whose last
--            membership ran out); leave (end ARGV[4]'s membership, and delete the group once
--            no member is left)
-- ARGV[3] -> the trash id
-- ARGV[4] -> the consumer leaving (mode leave)
-- ARGV[5] -> N, the most ids freed here
-- ARGV[6] -> the tombstone's life in ms (mode any)
-- Returns {status, version}: status 0 when the group is not registered, 1 deleted, 2
-- deleted with trash left for drain.lua, 3 kept (not expired, or members left), -1 durable
-- (mode leave). version is the registry's after the call ('0': the topic is gone).

local k = keys_at(TOPIC_KEYS + 1)
local t = keys_at(TOPIC_KEYS + ENGINE_KEYS + #STORE_KEY_NAMES + 1)
drain_ok(k.meta)
local group, mode = ARGV[1], ARGV[2]
local _, _, ephemeral = reg_parse(redis.call('HGET', k.registry, group))
local now = now_ms()
if ephemeral == nil then
  redis.call('ZREM', k.ephemeral, group) -- a stray left by a hand edit, which publish would keep finding
  -- An operator's delete of a group whose registration vanished (a restart, FLUSHALL): its
  -- running subscriptions would register it again; the tombstone stops them.
  if mode == 'any' then tombstone(k.tombs, group, now, tonumber(ARGV[6])) end
  return {0, '0'}
end
if mode == 'leave' then
  if not ephemeral then return {-1, '0'} end
  redis.call('ZREM', k.members, ARGV[4])
  local live = redis.call('ZRANGE', k.members, '+inf', '(' .. now, 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if live[1] then
    redis.call('ZADD', k.ephemeral, live[2], group)
    return {3, '0'}
  end
elseif mode == 'expired' then
  if not ephemeral then
    redis.call('ZREM', k.ephemeral, group) -- a durable group is never swept
    return {3, '0'}
  end
  local at = redis.call('ZSCORE', k.ephemeral, group)
  if not at or tonumber(at) >= now then return {3, '0'} end
end
redis.call('HDEL', k.registry, group)
redis.call('ZREM', k.ephemeral, group)
if mode == 'any' then tombstone(k.tombs, group, now, tonumber(ARGV[6])) end
redis.call('HDEL', k.meta, 'w:' .. group)
if topic_gone(k) then
  unlink(k.group)
  if redis.call('EXISTS', k.trash) == 0 then
    unlink(topic_keys())
  else
    -- Earlier deletions' trash is still listed: drain.lua deletes it, then the topic's keys.
    unlink({k.bodies, k.refs})
  end
  return {1, '0'}
end
local ver = new_version()
redis.call('HSET', k.meta, 'ver', ver)
if free(k, tonumber(ARGV[5])) then
  unlink(k.group)
  return {1, ver}
end
for i, key in ipairs(k.group) do
  if redis.call('EXISTS', key) == 1 then redis.call('RENAME', key, t.group[i]) end
end
redis.call('ZADD', k.trash, now, ARGV[3])
return {2, ver}
