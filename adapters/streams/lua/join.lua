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
-- KEYS[9..20] -> the group's own keys (lib.lua's group_keys)
-- ARGV[1] -> group
-- ARGV[2] -> consumer
-- ARGV[3] -> ttl in ms
-- ARGV[4] -> '1' for a renewal, which never registers the group
-- Returns 'ok'; 'durable' when the group is registered and not ephemeral; 'expired' when it is
-- registered and every membership ran out (the caller deletes it, then joins again, unless
-- renewing); 'gone' when a renewal finds the group not registered (deleted).

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
  return 'gone'
else
  register(k, false)
end
redis.call('ZADD', k.members, now + tonumber(ARGV[3]), ARGV[2])
local expiry = redis.call('ZRANGE', k.members, -1, -1, 'WITHSCORES')[2]
redis.call('ZADD', k.ephemeral, expiry, k.group)

local names = {}
for i, g in ipairs(groups) do names[i] = g.name end
local all = true
if #names > 0 then
  for _, s in ipairs(call_ids('ZMSCORE', k.ephemeral, {}, names)) do
    if not s then all = false end
  end
end
local own = {k.retry, k.leases, k.pending, k.counters, k.wake, k.reclaim_from, k.members, k.marks,
  k.dead, k.dead_index, k.dead_order}
if all then
  -- One TTL of slack past the deadlines, as the engine gives: a survivor's publish or Reclaim
  -- deletes a dead group, and releases the dead-letter references it held, before its keys
  -- expire by themselves.
  local slack = tonumber(ARGV[3])
  local last = redis.call('ZRANGE', k.ephemeral, -1, -1, 'WITHSCORES')[2] + slack
  for _, key in ipairs({k.stream, k.published, k.delayed, k.dead_refs, k.meta, k.paused, k.ephemeral, k.deleting}) do
    redis.call('PEXPIREAT', key, last)
  end
  for _, key in ipairs(own) do redis.call('PEXPIREAT', key, expiry + slack) end
else
  for _, key in ipairs(own) do redis.call('PERSIST', key) end
end
return 'ok'
