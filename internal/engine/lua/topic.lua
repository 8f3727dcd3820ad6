-- topic.lua: describe a topic: its backlog and its groups. Read-only; O(groups).
--
-- KEYS -> the topic's 8 keys (engine.lua's keys_at), then the backlog's store keys
-- Returns {backlog, group1, registry value1, expires1, ...}: backlog is the number of messages
-- in this backend's backlog of the topic; expires is an ephemeral group's latest membership
-- deadline (ms), -1 for a durable group.

local out = {0}
if redis.call('HGET', KEYS[1], 'backlog') == STORE_NAME then out[1] = store_size(store_keys_at(TOPIC_KEYS + 1)) end
local reg = redis.call('HGETALL', KEYS[4])
for i = 1, #reg, 2 do
  out[#out + 1] = reg[i]
  out[#out + 1] = reg[i + 1]
  out[#out + 1] = tonumber(redis.call('ZSCORE', KEYS[6], reg[i]) or '-1')
end
return out
