-- topic.lua: describe a topic: its backlog and its groups. Read-only; O(groups).
--
-- KEYS -> the topic's 8 keys (engine.lua's keys_at), then the backlog's store keys
-- Returns {backlog, dropped, group1, registry value1, expires1, ...}: backlog is the number of
-- messages in this backend's backlog of the topic, dropped how many the backlog dropped to
-- stay within its limit; expires is an ephemeral group's latest membership deadline (ms), -1
-- for a durable group.

local meta = redis.call('HMGET', KEYS[1], 'backlog', 'backlog_dropped')
local out = {0, tonumber(meta[2] or '0')}
if meta[1] == STORE_NAME then out[1] = store_size(store_keys_at(TOPIC_KEYS + 1)) end
local reg = redis.call('HGETALL', KEYS[4])
for i = 1, #reg, 2 do
  out[#out + 1] = reg[i]
  out[#out + 1] = reg[i + 1]
  out[#out + 1] = tonumber(redis.call('ZSCORE', KEYS[6], reg[i]) or '-1')
end
return out
