-- deletetopic.lua: delete every key of a topic (UNLINK): its messages, groups, backlog and
-- the trash of deleted groups. The caller reads the registry and the trash first and passes
-- their keys; when either changed meanwhile nothing is deleted and the caller reads again.
--
-- KEYS -> the topic's 7 keys (engine.lua's keys_at), the backlog's store keys, then the keys
--         of each group and of each trash (engine.lua's keys_at layout, without the topic's)
-- ARGV[1] -> G, then G group names, then T, then T trash ids
-- Returns the number of keys deleted, or -1 when the registry or the trash differ from those
-- passed.

local function same(have, args, from, n)
  if #have ~= n then return false end
  local want = {}
  for i = from, from + n - 1 do want[args[i]] = true end
  for _, x in ipairs(have) do
    if not want[x] then return false end
  end
  return true
end

local G = tonumber(ARGV[1])
local T = tonumber(ARGV[G + 2])
if not same(redis.call('HKEYS', KEYS[4]), ARGV, 2, G) or
  not same(redis.call('ZRANGE', KEYS[7], 0, -1), ARGV, G + 3, T) then
  return -1
end
local all = topic_keys()
for i = TOPIC_KEYS + 1, #KEYS do all[#all + 1] = KEYS[i] end
local n = 0
for i = 1, #all, 512 do
  n = n + redis.call('UNLINK', unpack(all, i, math.min(i + 511, #all)))
end
return n
