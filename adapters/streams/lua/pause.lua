-- pause.lua: pause or resume a group: its claims return nothing while it is in the topic's
-- paused SET (claim.lua looks first).
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- ARGV[1] -> group
-- ARGV[2] -> '1' pause, '0' resume
-- Returns 1, or 0 when the group is not registered.

local k = topic_keys()
k.group = ARGV[1]
drain_ok(k.dead_refs) -- an operator may pause a group on a full Redis
if not find_group(k) then return 0 end
if ARGV[2] == '1' then
  redis.call('SADD', k.paused, k.group)
  keep_ttl(k, {k.paused})
else
  redis.call('SREM', k.paused, k.group)
end
return 1
