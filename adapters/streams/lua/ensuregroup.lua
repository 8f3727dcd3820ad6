-- ensuregroup.lua: register a durable consumer group on a topic's stream (and the stream),
-- unless it exists (ephemeral or durable, it is left as it is). The topic's first group takes
-- the backlog (register in lib.lua), and the topic's keys then live for good (PERSIST: the
-- backlog's expiry, or the one Join set while every group was ephemeral).
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- KEYS[9..22] -> the group's own keys (lib.lua's group_keys)
-- ARGV[1] -> group
-- ARGV[2] -> '1': a new group that is not the topic's first starts from the oldest retained
--            entry; '0': from the next one
-- Returns 1 when the group was created, 0 when it existed.

local k = group_keys(topic_keys(), 9)
k.group = ARGV[1]
-- An existing group is found with reads only, so registering it again works on a full Redis,
-- which refuses XGROUP CREATE before it could answer BUSYGROUP.
local created = register(k, ARGV[2] == '1')
if created == 1 then
  for _, key in ipairs({k.stream, k.published, k.delayed, k.dead_refs, k.meta, k.paused, k.ephemeral, k.deleting}) do
    redis.call('PERSIST', key)
  end
end
return created
