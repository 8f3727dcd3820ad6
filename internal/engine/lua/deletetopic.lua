-- deletetopic.lua: delete every key of a topic (UNLINK): its messages, groups, backlog and
-- the trash of deleted groups, leaving a tombstone of each group for ARGV[1] ms (common.lua),
-- so that their running subscriptions stop rather than register them again. The caller reads
-- the registry and the trash first and passes their keys; when either changed meanwhile
-- nothing is deleted and the caller reads again.
--
-- KEYS -> the topic's 8 keys (engine.lua's keys_at), the backlog's store keys, then the keys
--         of each group and of each trash (engine.lua's keys_at layout, without the topic's)
-- ARGV[1] -> the tombstones' life in ms
-- ARGV[2] -> G, then G group names, then T, then T trash ids
-- Returns the number of keys deleted (tombstones not counted), or -1 when the registry or the
-- trash differ from those passed.

local function same(have, args, from, n)
  if #have ~= n then return false end
  local want = {}
  for i = from, from + n - 1 do want[args[i]] = true end
  for _, x in ipairs(have) do
    if not want[x] then return false end
  end
  return true
end

local G = tonumber(ARGV[2])
local T = tonumber(ARGV[G + 3])
if not same(redis.call('HKEYS', KEYS[4]), ARGV, 3, G) or
  not same(redis.call('ZRANGE', KEYS[7], 0, -1), ARGV, G + 4, T) then
  return -1
end
local now = now_ms()
for i = 3, G + 2 do tombstone(KEYS[8], ARGV[i], now, tonumber(ARGV[1])) end
local all = topic_keys()
for i = TOPIC_KEYS + 1, #KEYS do all[#all + 1] = KEYS[i] end
local n = 0
for i = 1, #all, 512 do
  n = n + redis.call('UNLINK', unpack(all, i, math.min(i + 511, #all)))
end
return n
