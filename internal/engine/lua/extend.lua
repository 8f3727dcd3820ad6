-- extend.lua: push the lease deadline of held deliveries to now + lease. Fenced: only where the
-- consumer holds that attempt (an expired lease not yet reclaimed is still held).
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> consumer
-- ARGV[2] -> lease in ms
-- ARGV[2i+1], ARGV[2i+2] -> item i: id, attempt
-- Returns the ids the consumer no longer holds.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local consumer = ARGV[1]
local ids, want = {}, {}
for i = 3, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
  want[#ids] = ARGV[i + 1]
end
local recs = redis.call('HMGET', k.holders, unpack(ids))
local deadline = now_ms() + tonumber(ARGV[2])
local z, lost = {}, {}
for i, id in ipairs(ids) do
  local v = recs[i]
  if v and holds(v, consumer, want[i]) then
    z[#z + 1] = deadline
    z[#z + 1] = id
  else
    lost[#lost + 1] = id
  end
end
if #z > 0 then call_chunked('ZADD', k.pending, z, 2) end
return lost
