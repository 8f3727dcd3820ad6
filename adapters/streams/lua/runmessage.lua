-- runmessage.lua: make a delayed message of a group due now. A parked retry is rescheduled at
-- now; an unread entry published with a delay (the topic's delayed ZSET holds its due time
-- for every group) is marked due for this group only (marks ':r'), which the claim that reads
-- it honours. Blocked claims are woken.
--
-- KEYS[1..16] -> inspect.lua's inspect_keys
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> id
-- Returns 1; 0 when the group does not hold it; -1 when it holds it but it is not delayed; or
-- an error reply starting 'NOGROUP relq:' when the group is not registered.

local k = inspect_keys()
k.group, k.parked = ARGV[1], ARGV[2]
local me = find_group(k)
if not me then return redis.error_reply('NOGROUP relq: group not registered') end
local id, now = ARGV[3], now_ms()
local at = locate(k, me, id, now)
if not at then return 0 end
if (at.kind ~= 'parked' and at.kind ~= 'unread') or at.due <= now then return -1 end
if at.kind == 'parked' then
  redis.call('ZADD', k.retry, 'XX', now, pad(id))
else
  redis.call('ZADD', k.marks, 0, pad(id) .. ':r')
  keep_ttl(k, {k.marks})
end
wake(k)
keep_ttl(k, {k.wake})
return 1
