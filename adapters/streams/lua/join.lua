-- join.lua: make a consumer a live member of an ephemeral group until now + ttl (Redis clock),
-- registering the group when it is new (register in lib.lua: the topic's first group takes
-- the backlog; another starts with the next publish). The group's expiry (ephemeral ZSET) is
-- its latest membership deadline. While every group of the topic is ephemeral, the topic's
-- keys expire one ttl after the latest expiry of its groups and the group's own keys one ttl
-- after its own, so a topic whose processes all died leaves no key; otherwise the group's
-- keys live for good
-- (the next publish or Reclaim deletes the group once it expired).
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- KEYS[9..22] -> the group's own keys (lib.lua's group_keys), KEYS[23] -> the topic's tombs
-- ARGV[1] -> group
-- ARGV[2] -> consumer
-- ARGV[3] -> ttl in ms
-- ARGV[4] -> '1' for a renewal, which never registers the group
-- Returns 'ok'; 'durable' when the group is registered and not ephemeral; 'expired' when it is
-- registered and every membership ran out (the caller deletes it, then joins again, unless
-- renewing); 'deleted' when a renewal finds the group not registered under a tombstone (an
-- operator deleted it), 'lost' when it finds it not registered without one.

local k = group_keys(topic_keys(), 9)
k.group = ARGV[1]
-- A renewal must work on a full Redis (noeviction): were it refused for a TTL, the sweep would
-- delete a live group. After this write Redis lets the rest run.
drain_ok(k.counters)
local now = now_ms()
local me, groups = find_group(k)
if me then
  local expiry = redis.call('ZSCORE', k.ephemeral, k.group)
  if not expiry then return 'durable' end
  if tonumber(expiry) < now then return 'expired' end
elseif ARGV[4] == '1' then
  if tombstoned(k.tombs, k.group, now) then return 'deleted' end
  return 'lost'
else
  register(k, false)
end
add_member(k, groups, ARGV[2], tonumber(ARGV[3]), now)
return 'ok'
