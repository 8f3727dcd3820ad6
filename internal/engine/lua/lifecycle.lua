-- lifecycle.lua: what registering and deleting groups share, linked after the store's
-- store.lua (it uses store_size and store_drop) into the scripts that need it.

-- register registers group (not registered yet) with the ephemeral flag and returns the new
-- registry version. The first group of a topic takes the backlog (bk: its store keys, as
-- store_keys_at gives them): each backlog key is RENAMEd to the group's (O(1)) and no longer
-- expires. The group's seq is the topic's less the backlog's size, so that Stats' Published
-- counts what it took. A tombstone of the name (an earlier group an operator deleted) goes:
-- it is about that group, not this one; after the registry's HSET, since a ZREM first would
-- be the script's first write, after which Redis refuses no write for want of memory, and a
-- new group on a full Redis must be refused (ErrRedisFull).
local function register(k, bk, group, seq, ephemeral)
  local from = seq
  -- A group whose store keys survived the loss of the registry (another client deleted that
  -- key alone) keeps them: a RENAME onto them would drop its own messages. The backlog then
  -- stays a backlog (shown by Admin.Topic) until it expires.
  local own = {}
  for i, name in ipairs(STORE_KEY_NAMES) do own[i] = k[name] end
  if redis.call('EXISTS', k.registry) == 0 and redis.call('HGET', k.meta, 'backlog') == STORE_NAME
      and redis.call('EXISTS', unpack(own)) == 0 then
    from = seq - store_size(bk)
    for _, name in ipairs(STORE_KEY_NAMES) do
      if redis.call('EXISTS', bk[name]) == 1 then
        redis.call('RENAME', bk[name], k[name])
        redis.call('PERSIST', k[name])
      end
    end
    redis.call('HDEL', k.meta, 'backlog')
  end
  redis.call('HSET', k.registry, group, reg_value(from, false, ephemeral))
  redis.call('ZREM', k.tombs, group)
  local ver = new_version()
  local fresh = redis.call('HEXISTS', k.meta, 'ver') == 0
  redis.call('HSET', k.meta, 'ver', ver, 'layout', LAYOUT, 'seq', seq) -- seq: a new topic's first
  -- A registry started afresh (a new topic, or one whose state vanished): publishers whose
  -- cached registry is older than this version may restore their durable groups (publish.lua).
  if fresh then redis.call('HSET', k.meta, 'reborn', ver) end
  return ver
end

-- add_member makes consumer a member of the ephemeral group (registered) until now + ttl ms:
-- the group's deadline in the topic's ephemeral ZSET is its latest member's. While every group
-- of the topic is ephemeral, the topic's keys and the group's expire ttl after the latest
-- deadline (meta's expire field, which the other scripts give the keys they create:
-- engine.lua's keep_expiry); otherwise the group's keys do not expire.
local function add_member(k, group, consumer, ttl, now)
  redis.call('ZREMRANGEBYSCORE', k.members, '-inf', '(' .. now)
  redis.call('ZADD', k.members, now + ttl, consumer)
  local latest = redis.call('ZRANGE', k.members, 0, 0, 'REV', 'WITHSCORES')
  redis.call('ZADD', k.ephemeral, latest[2], group)
  if redis.call('ZCARD', k.ephemeral) == redis.call('HLEN', k.registry) then
    local at = tonumber(redis.call('ZRANGE', k.ephemeral, 0, 0, 'REV', 'WITHSCORES')[2]) + ttl
    redis.call('HSET', k.meta, 'expire', at)
    for _, key in ipairs(topic_keys()) do redis.call('PEXPIREAT', key, at) end
    for _, key in ipairs(k.group) do redis.call('PEXPIREAT', key, at) end
  else
    for _, key in ipairs(k.group) do redis.call('PERSIST', key) end
  end
end

-- registry_reply is {version, reborn, groups...}, for the caller's publish cache: reborn is
-- the version the registry last started afresh at ('0': unknown), and an ephemeral group is
-- "name:e" (group names hold no ':'), so that a publisher knows which groups it may restore
-- after the topic's state vanished (publish.lua).
local function registry_reply(meta, registry, ver)
  local reply = {ver, redis.call('HGET', meta, 'reborn') or '0'}
  local all = redis.call('HGETALL', registry)
  for i = 1, #all, 2 do
    local _, _, ephemeral = reg_parse(all[i + 1])
    reply[#reply + 1] = ephemeral and all[i] .. ':e' or all[i]
  end
  return reply
end

-- free takes up to n of the ids a group holds (in its store, pending or dead) and drops its
-- reference to each (the body goes with the last one). It returns true once the group holds
-- nothing more.
local function free(k, n)
  local ids, removed = store_drop(k, n)
  local left = n - removed
  for _, key in ipairs({k.pending, k.dead}) do
    if left > 0 then
      local z = redis.call('ZPOPMIN', key, left)
      for i = 1, #z, 2 do ids[#ids + 1] = z[i] end
      left = left - #z / 2
    end
  end
  unref(k, dedupe(ids))
  return left > 0
end

-- topic_gone reports whether the topic keeps nothing any more: no group and no backlog.
local function topic_gone(k)
  return redis.call('EXISTS', k.registry) == 0 and not redis.call('HGET', k.meta, 'backlog')
end
