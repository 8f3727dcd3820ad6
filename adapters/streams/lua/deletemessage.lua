-- deletemessage.lua: remove one message from a group for good, in any state; the other groups
-- of the topic keep theirs. A dead letter is forgotten; a delivery in the PEL (held or
-- parked) is acked and its schedules dropped, so its holder's later ack or nack is stale; an
-- entry the group has not read yet cannot leave the group's view of the stream, so it is
-- marked deleted (marks ':d') and the claim that reads it acks it undelivered. With
-- delete-on-ack, an entry that no group needs any more is deleted from the stream.
--
-- KEYS[1..16] -> inspect.lua's inspect_keys
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> id
-- ARGV[4] -> '1': delete-on-ack retention
-- Returns 1, 0 when the group does not hold it, or an error reply starting 'NOGROUP relq:'
-- when the group is not registered.

local k = inspect_keys()
k.group, k.parked = ARGV[1], ARGV[2]
drain_ok(k.dead_refs)
local me, groups = find_group(k)
if not me then return redis.error_reply('NOGROUP relq: group not registered') end
local id = ARGV[3]
local at = locate(k, me, id, now_ms())
if not at then return 0 end
if at.kind == 'unread' then
  redis.call('ZADD', k.marks, 0, pad(id) .. ':d')
  redis.call('ZREM', k.marks, pad(id) .. ':r')
  keep_ttl(k, {k.marks})
  return 1
end
if at.kind == 'dead' then
  forget(k, {{id, at.dl}})
  if redis.call('XLEN', k.dead) == 0 then redis.call('DEL', k.dead, k.dead_index, k.dead_order) end
else
  redis.call('XACK', k.stream, k.group, id)
  redis.call('ZREM', k.retry, pad(id))
  redis.call('ZREM', k.pending, id)
end
if ARGV[4] == '1' then xdel(k, unneeded(k, {id}, groups)) end
return 1
