-- deadletters.lua (list and zset): read one page of a group's dead letters, oldest first. Read-only.
--
-- KEYS[1] -> dead (ZSET id -> dead at, ms)
-- KEYS[2] -> dead_reasons (HASH id -> reason)
-- KEYS[3] -> attempts (HASH id -> attempt)
-- KEYS[4] -> {p:t}:bodies (HASH id -> envelope bytes)
-- ARGV[1] -> offset
-- ARGV[2] -> count
-- Returns {id, dead at ms, reason, attempts, body or false, ...}.

local page = redis.call('ZRANGE', KEYS[1], ARGV[1], tonumber(ARGV[1]) + tonumber(ARGV[2]) - 1, 'WITHSCORES')
local out = {}
for i = 1, #page, 2 do
  local id = page[i]
  out[#out + 1] = id
  out[#out + 1] = page[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[2], id) or ''
  out[#out + 1] = tonumber(redis.call('HGET', KEYS[3], id) or '0')
  out[#out + 1] = redis.call('HGET', KEYS[4], id)
end
return out
