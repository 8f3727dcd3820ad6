-- topic.lua: a topic's groups, each with its flags, and its backlog. Read-only.
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- Returns {backlog, dropped, name1, paused1, expires1, ...}: backlog the entries waiting for the
-- first group (0 while the topic has a group; see backlog_size in lib.lua), dropped how many
-- the backlog dropped to stay within its limit (publish.lua); per group of the stream
-- (relq's or another program's) its name, 1 when paused, and the ms its last membership runs
-- out (-1: durable).

local k = topic_keys()
local groups = groups_of(k)
local out = {0, tonumber(redis.call('HGET', k.meta, 'backlog_dropped') or '0')}
if #groups == 0 then
  out[1] = backlog_size(k)
  return out
end
local names = {}
for i, g in ipairs(groups) do names[i] = g.name end
local paused = call_ids('SMISMEMBER', k.paused, {}, names)
local expiry = call_ids('ZMSCORE', k.ephemeral, {}, names)
for i, name in ipairs(names) do
  out[#out + 1] = name
  out[#out + 1] = paused[i]
  out[#out + 1] = expiry[i] and tonumber(expiry[i]) or -1
end
return out
