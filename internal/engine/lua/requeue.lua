-- requeue.lua: move dead letters back to ready with their attempts reset: the ids given, or
-- the N oldest. A dead letter whose body is gone is dropped instead.
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> N: with no ids after it, requeue the N oldest dead letters
-- ARGV[2..] -> ids to requeue
-- Returns {dead letters looked at, requeued}.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local ids = chosen_dead(k)
if #ids == 0 then return {0, 0} end
local infos = redis.call('HMGET', k.info, unpack(ids))
local bodies = redis.call('HMGET', k.bodies, unpack(ids))
local back = {}
for i, id in ipairs(ids) do
  if bodies[i] then
    local _, extra = parse_info(infos[i])
    back[#back + 1] = {id = id, extra = extra, attempt = 0, kind = 'requeue'}
  end
end
call_chunked('ZREM', k.dead, ids, 1)
call_chunked('HDEL', k.info, ids, 1)
store_back(k, back, now_ms())
keep_expiry(k) -- a store key created again expires with an ephemeral group's
return {#ids, #back}
