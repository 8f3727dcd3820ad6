-- pause.lua: pause or resume a group: the paused flag of its registry value, which claim.lua
-- and register.lua read. Idempotent. It opens with drain_ok, so an operator can pause a group
-- of a full Redis.
--
-- KEYS -> the topic's 8 keys (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> 1 to pause, 0 to resume
-- Returns 0 when the group is not registered, else 1.

drain_ok(KEYS[1])
local v = redis.call('HGET', KEYS[4], ARGV[1])
if not v then return 0 end
local seq, _, ephemeral = reg_parse(v)
local want = reg_value(seq, ARGV[2] == '1', ephemeral)
if want ~= v then redis.call('HSET', KEYS[4], ARGV[1], want) end
return 1
