-- regain.lua: register again a group that a running subscription registered before and now
-- finds unregistered (its claim failed with RELQLOST): the group's state vanished (Redis
-- restarted empty, a failover to a replica that had not synced, FLUSHALL, keys deleted by
-- hand), it was not deleted. Under a tombstone (an operator deleted it meanwhile) nothing is
-- written and the reply is RELQGONE. The group registers as ensuregroup.lua or join.lua would
-- register it: the topic's first group takes the backlog, which holds what was published
-- while no group was registered. The group's counters record the re-registration (reregistered:
-- how many times, reregistered_at: when), so Stats and the tools show it.
--
-- KEYS -> the topic's 8 keys, the backlog's store keys, then the group's keys (engine.lua's
--         keys_at layout)
-- ARGV[1] -> group
-- ARGV[2] -> '1' for an ephemeral group (the consumer joins it), '0' for a durable one
-- ARGV[3] -> consumer (ephemeral)
-- ARGV[4] -> membership TTL in ms (ephemeral)
-- ARGV[5] -> how many re-registrations the caller knows of: the count goes on from the larger
--            of it and the group's own, since a Redis that came back empty forgot its own
-- Returns {registered, times, at, known, groups, backlog, version, groups...}: registered 1
-- when this call registered the group, 0 when it was registered already (by another
-- subscription; an ephemeral one is joined all the same); times and at (ms) the group's
-- re-registrations and the latest; known 1 when the topic still knew it had had groups (a
-- registry version: its keys were not all lost), groups how many other groups it had, backlog
-- how many messages the group took from the backlog. Error replies: RELQGONE (a tombstone), RELQDURABLE (an ephemeral group asked,
-- a durable one registered), or a layout this code cannot read.

local S = #STORE_KEY_NAMES
local bk = store_keys_at(TOPIC_KEYS + 1)
local k = keys_at(TOPIC_KEYS + S + 1)
local group, ephemeral = ARGV[1], ARGV[2] == '1'
local meta = redis.call('HMGET', k.meta, 'layout', 'seq', 'ver', 'expire', 'backlog')
check_layout(meta[1])
if redis.call('EXISTS', k.legacy) == 1 then return layout_error(1) end
local now = now_ms()
local ver = meta[3] or '0'
local v = redis.call('HGET', k.registry, group)
local registered, found_groups, backlog = 0, 0, 0
if v then
  local _, _, eph = reg_parse(v)
  if ephemeral and not eph then return redis.error_reply('RELQDURABLE group is registered as durable') end
else
  if tombstoned(k.tombs, group, now) then return redis.error_reply('RELQGONE group was deleted') end
  found_groups = redis.call('HLEN', k.registry)
  if found_groups == 0 and meta[5] == STORE_NAME then backlog = store_size(bk) end
  ver = register(k, bk, group, topic_seq(meta[2]), ephemeral)
  if not ephemeral then
    if meta[4] then redis.call('HDEL', k.meta, 'expire') end
    for _, key in ipairs(topic_keys()) do redis.call('PERSIST', key) end
  end
  local times = math.max(tonumber(redis.call('HGET', k.counters, 'reregistered') or '0'), tonumber(ARGV[5])) + 1
  redis.call('HSET', k.counters, 'reregistered', times, 'reregistered_at', now)
  registered = 1
end
if ephemeral then add_member(k, group, ARGV[3], tonumber(ARGV[4]), now) end
local c = redis.call('HMGET', k.counters, 'reregistered', 'reregistered_at')
local reply = {registered, tonumber(c[1] or '0'), tonumber(c[2] or '0'), meta[3] and 1 or 0, found_groups, backlog}
for _, x in ipairs(registry_reply(k.meta, k.registry, ver)) do reply[#reply + 1] = x end
return reply
