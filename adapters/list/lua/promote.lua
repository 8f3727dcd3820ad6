-- promote.lua: move the group's due delayed messages to the back of ready, where a consumer
-- blocked in BLMOVE takes one at once. A consumer whose claim reported a due time runs it at
-- that time (Claim): a BLMOVE timeout cut to the due time would end on Redis's server tick
-- (every 100 ms at the default hz 10), late. A paused group promotes nothing (its consumers
-- do not wait in BLMOVE); neither does a group that is not registered.
--
-- KEYS -> the topic's 8 keys, then the group's (internal/engine's keys_at)
-- ARGV[1] -> the group's name
-- ARGV[2] -> the most messages to promote
-- Returns how many it promoted.

local k = keys_at(TOPIC_KEYS + 1)
local _, paused, ephemeral = reg_parse(redis.call('HGET', k.registry, ARGV[1]))
if paused == nil or paused then return 0 end
local n = promote(k, now_ms(), tonumber(ARGV[2]))
if n > 0 and ephemeral then keep_expiry(k) end
return n
