-- deletegroup.lua: delete a group. It is unregistered at once (XGROUP DESTROY, and every key of
-- relq's for it unlinked), so that publishes stop reaching it, its claims fail and a new group
-- of its name starts empty; its dead letters' references (dead_refs) are released here when
-- there are at most N of them, else its dead-letter stream moves to its tomb (dead_gone, the
-- group listed in deleting) for release.lua to release in steps. When it was the topic's last
-- group, nothing published while the topic had a group is backlog (pubsub's backlog rule: only
-- what is published with no group is): the backlog starts after the stream's last generated
-- ID (meta backlog_from), so there is none, and the topic loses every key at once, this group's
-- dead letters included (no reference to release: dead_refs goes too). Only while other
-- deleted groups' dead letters are still being released (deleting) does the stream stay, its
-- entries up to backlog_from trimmed in steps (release.lua, settle_topic in lib.lua).
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- KEYS[9..22] -> the group's own keys (lib.lua's group_keys), KEYS[23] -> the topic's tombs
-- ARGV[1] -> group
-- ARGV[2] -> mode: 'admin' (delete it if registered), 'expired' (only if every membership of
--            the ephemeral group ran out), 'leave' (end ARGV[3]'s membership; delete it if it
--            was the last)
-- ARGV[3] -> consumer (leave)
-- ARGV[4] -> N, the most dead letters released here
-- ARGV[5] -> '1': delete-on-ack retention
-- ARGV[6] -> the backlog ttl in ms
-- ARGV[7] -> the tombstone's life in ms (mode admin: an operator's delete leaves one, see
--            luakit's common.lua, so the group's running subscriptions stop rather than
--            register it again)
-- Returns {status, more, walk_to}. status: 'deleted'; 'notfound' (not registered); 'kept' (a
-- member is left, or not expired); 'durable' (leave of a group that is not ephemeral);
-- 'release' (not registered, but an earlier delete of it is unfinished); 'busy' (an earlier
-- delete's tomb is still being released: release it, then call again). more: 1 when
-- release.lua steps remain. walk_to: with delete-on-ack and groups left, the stream's last ID,
-- up to which release.lua deletes the entries that only the deleted group still needed.

local k = group_keys(topic_keys(), 9)
k.group = ARGV[1]
drain_ok(k.counters)
local mode, batch = ARGV[2], tonumber(ARGV[4])
local me, groups = find_group(k)

if mode == 'leave' then
  if not me then return {'notfound', 0, ''} end
  if not redis.call('ZSCORE', k.ephemeral, k.group) then return {'durable', 0, ''} end
  redis.call('ZREM', k.members, ARGV[3])
  local top = redis.call('ZRANGE', k.members, -1, -1, 'WITHSCORES')
  if top[2] then
    redis.call('ZADD', k.ephemeral, top[2], k.group)
    return {'kept', 0, ''}
  end
elseif mode == 'expired' then
  local expiry = redis.call('ZSCORE', k.ephemeral, k.group)
  if not expiry or tonumber(expiry) >= now_ms() then
    if not me and redis.call('SISMEMBER', k.deleting, k.group) == 1 then return {'release', 1, ''} end
    return {'kept', 0, ''}
  end
elseif not me then
  if redis.call('SISMEMBER', k.deleting, k.group) == 1 then return {'release', 1, ''} end
  -- An operator's delete of a group whose registration vanished (a restart, FLUSHALL): its
  -- running subscriptions would register it again; the tombstone stops them.
  if mode == 'admin' then tombstone(k.tombs, k.group, now_ms(), tonumber(ARGV[7])) end
  return {'notfound', 0, ''}
end
if redis.call('EXISTS', k.dead_gone) == 1 then return {'busy', 1, ''} end

if me then redis.call('XGROUP', 'DESTROY', k.stream, k.group) end
if mode == 'admin' then tombstone(k.tombs, k.group, now_ms(), tonumber(ARGV[7])) end
redis.call('UNLINK', k.retry, k.leases, k.pending, k.counters, k.wake, k.reclaim_from, k.members, k.marks,
  k.dead_index, k.dead_order, k.holders, k.quiet)
redis.call('SREM', k.paused, k.group)
redis.call('ZREM', k.ephemeral, k.group)

local rest = {}
for _, g in ipairs(groups) do
  if g.name ~= k.group then rest[#rest + 1] = g end
end
if me and #rest == 0 then
  if redis.call('SCARD', k.deleting) == 0 then
    redis.call('UNLINK', k.stream, k.published, k.delayed, k.dead_refs, k.meta, k.paused, k.ephemeral, k.deleting,
      k.dead)
    return {'deleted', 0, ''}
  end
  local last = last_id(k)
  if last then redis.call('HSET', k.meta, 'backlog_from', last) end
end
local more = 0
local dead = redis.call('XLEN', k.dead)
if dead > batch then
  redis.call('RENAME', k.dead, k.dead_gone)
  redis.call('SADD', k.deleting, k.group)
  more = 1
elseif dead > 0 then
  local ids = release_dead(k, k.dead, batch)
  redis.call('DEL', k.dead)
  if ARGV[5] == '1' then xdel(k, unneeded(k, ids, rest)) end
end

local walk_to = ''
if #rest == 0 then
  local trim = settle_topic(k, ARGV[6])
  more = math.max(more, trim)
elseif ARGV[5] == '1' then
  local last = redis.call('XREVRANGE', k.stream, '+', '-', 'COUNT', 1)[1]
  if last then
    walk_to = last[1]
    more = 1
  end
end
return {'deleted', more, walk_to}
