-- regain.lua: create again the consumer group of a running subscription that found it gone
-- (its claim failed with 'NOGROUP relq: group lost'): its state vanished (Redis restarted
-- empty, a failover to a replica that had not synced, FLUSHALL, XGROUP DESTROY or keys deleted
-- by hand), it was not deleted. Under a tombstone (an operator deleted it meanwhile) nothing
-- is written.
--
-- Where the group starts, so that every entry published since it vanished is delivered:
--   - after ARGV[6], the last entry the subscription received, when the stream still holds an
--     entry up to it (its history goes on: the group was destroyed, the stream kept);
--   - with no such entry (the stream is new: every entry it holds came after the loss), as
--     the topic's first group (the backlog rule: register in lib.lua) when the stream has no
--     other group, else from its first entry;
--   - with no ARGV[6] (the subscription received nothing yet), where the first group
--     registered again after the topic was forgotten started (meta's lost_from, kept an hour),
--     else at the earliest position of the stream's other groups, or by the backlog rule when
--     there is none.
-- It records the re-registration in the group's counters (reregistered: how many times,
-- reregistered_at: when), so that Stats and the tools show it.
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- KEYS[9..22] -> the group's own keys (lib.lua's group_keys), KEYS[23] -> the topic's tombs
-- ARGV[1] -> group
-- ARGV[2] -> '1' for an ephemeral group (the consumer joins it), '0' for a durable one
-- ARGV[3] -> consumer (ephemeral)
-- ARGV[4] -> membership TTL in ms (ephemeral)
-- ARGV[5] -> how many re-registrations the caller knows of: the count goes on from the larger
--            of it and the group's own, since a Redis that came back empty forgot its own
-- ARGV[6] -> the last entry ID the subscription received ('' none)
-- Returns {registered, times, at, known, groups, backlog}: registered 1 when this call created
-- the group, 0 when it existed (an ephemeral one is joined all the same); times and at (ms)
-- the group's re-registrations and the latest; known 1 when the topic still knew the group
-- (its counters were kept), groups how many other groups the stream had, backlog how many
-- entries the group can read at once. Or 'deleted' (a tombstone), or 'durable' (an ephemeral
-- group asked, a durable one registered).

local LOST_FROM_MS = 3600000 -- how long a later group may start at lost_from

local k = group_keys(topic_keys(), 9)
k.group = ARGV[1]
local ephemeral, after = ARGV[2] == '1', ARGV[6]
local now = now_ms()
local me, groups = find_group(k)
local registered, known, backlog = 0, 0, 0
if me then
  if ephemeral and not redis.call('ZSCORE', k.ephemeral, k.group) then return 'durable' end
else
  if tombstoned(k.tombs, k.group, now) then return 'deleted' end
  known = redis.call('EXISTS', k.counters)
  local start
  if after ~= '' then
    local first = redis.call('XRANGE', k.stream, '-', '+', 'COUNT', 1)[1]
    if first and id_cmp(first[1], after) <= 0 then
      start = after
    elseif #groups > 0 then
      start = '0'
    end
  else
    local lost = redis.call('HGET', k.meta, 'lost_from')
    local from, at = string.match(lost or '', '^([%d%-]+)@(%d+)$')
    if from and #groups > 0 and now - tonumber(at) < LOST_FROM_MS then start = from end
    if not start then
      for _, g in ipairs(groups) do
        if not start or id_cmp(g.last, start) < 0 then start = g.last end
      end
    end
  end
  if start then
    if start == '0' then backlog = redis.call('XLEN', k.stream) end
    create_group(k, start, backlog)
  else
    -- The topic's first group again: it takes the backlog. When the topic forgot its groups
    -- too, another group that comes back without a position starts where this one did.
    local size, from = backlog_size(k)
    backlog = size
    register(k, false)
    if known == 0 then redis.call('HSET', k.meta, 'lost_from', (from or '0') .. '@' .. now) end
  end
  if not ephemeral then
    for _, key in ipairs({k.stream, k.published, k.delayed, k.dead_refs, k.meta, k.paused, k.ephemeral, k.deleting}) do
      redis.call('PERSIST', key)
    end
  end
  local times = math.max(tonumber(redis.call('HGET', k.counters, 'reregistered') or '0'), tonumber(ARGV[5])) + 1
  redis.call('HSET', k.counters, 'reregistered', times, 'reregistered_at', now)
  registered = 1
end
if ephemeral then add_member(k, groups, ARGV[3], tonumber(ARGV[4]), now) end
local c = redis.call('HMGET', k.counters, 'reregistered', 'reregistered_at')
return {registered, tonumber(c[1] or '0'), tonumber(c[2] or '0'), known, #groups, backlog}
