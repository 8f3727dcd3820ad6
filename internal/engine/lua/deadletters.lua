-- deadletters.lua: read one page of a group's dead letters, oldest first. Read-only; O(log N +
-- page): ZRANGE by rank, then one HMGET per hash.
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> offset
-- ARGV[2] -> count
-- Returns {id, dead at ms, reason, attempts, body or false, ...}.

local k = keys_at(TOPIC_KEYS + 1)
local page = redis.call('ZRANGE', k.dead, ARGV[1], tonumber(ARGV[1]) + tonumber(ARGV[2]) - 1, 'WITHSCORES')
if #page == 0 then return {} end
local ids = {}
for i = 1, #page, 2 do ids[#ids + 1] = page[i] end
local infos = redis.call('HMGET', k.info, unpack(ids))
local bodies = redis.call('HMGET', k.bodies, unpack(ids))
local out = {}
for i, id in ipairs(ids) do
  local attempts, _, reason = parse_info(infos[i])
  out[#out + 1] = id
  out[#out + 1] = page[2 * i]
  out[#out + 1] = reason
  out[#out + 1] = attempts
  out[#out + 1] = bodies[i]
end
return out
