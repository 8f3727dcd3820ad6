-- common.lua: helpers prepended to every script of every adapter (luakit.Source, and
-- internal/engine for list and zset). It declares no keys.

-- Scripts read TIME before writing. Redis >= 5 replicates scripts by their effects, which
-- allows that; the call keeps 6.x configured for verbatim replication safe (a no-op on 7).
if redis.replicate_commands ~= nil then redis.replicate_commands() end

-- call_chunked runs redis.call(cmd, key, ...) over the flat list args, in slices of at most
-- 512 values (whole items of width values each): one call per slice instead of one per item,
-- while unpack stays far below Lua's stack limit however large the batch.
local function call_chunked(cmd, key, args, width)
  local step = 512 - 512 % width
  for i = 1, #args, step do
    redis.call(cmd, key, unpack(args, i, math.min(i + step - 1, #args)))
  end
end

-- now_ms is the Redis clock in milliseconds: the only clock relq trusts.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- drain_ok lets the rest of a script that frees or keeps memory (ack, nack, extend, reclaim,
-- requeue, purge) run on a full Redis (maxmemory reached under noeviction), so that
-- consumers can drain it. A script without a shebang is refused a command that may add data
-- (ZADD, HSET, HINCRBY, LPUSH, XADD, ...) only while it has run no write yet; after any write
-- Redis lets it finish rather than stop it halfway. HDEL is a write that Redis never refuses,
-- and no relq hash has a field '', so this one changes nothing and replicates nothing. It must
-- come before the script's first write. A claim needs none: when it takes anything, its first
-- write is the take (RPOP, ZREM, XREADGROUP), which Redis never refuses. Scripts that add data
-- (publish) never call it: a full Redis refuses them, and the caller gets pubsub.ErrRedisFull.
-- hash is a HASH in KEYS.
local function drain_ok(hash)
  redis.call('HDEL', hash, '')
end

-- bytes_less orders strings byte by byte, as Redis orders the members of one ZSET score and
-- consumer names (Lua's own < follows the server's locale).
local function bytes_less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- zset_after is the rank in the ZSET key of the first member after (score, member) in ZSET
-- order, so that an Admin listing goes on after the last member of its page even when that
-- member left: ZRANK's next while member keeps that score, else a binary search by rank among
-- the members of that score, which Redis orders bytewise. O(log² N).
local function zset_after(key, score, member)
  score = tonumber(score)
  local s = redis.call('ZSCORE', key, member)
  if s and tonumber(s) == score then return redis.call('ZRANK', key, member) + 1 end
  local at = string.format('%.17g', score)
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. at)
  local hi = redis.call('ZCOUNT', key, '-inf', at)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if bytes_less(member, redis.call('ZRANGE', key, mid, mid)[1]) then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- Tombstones. Deleting a group through the Admin API (not an ephemeral group's end, nor keys
-- lost to a restart, a failover or a hand edit) leaves a tombstone in its topic's tombs ZSET
-- (group -> when the tombstone expires, ms) for the deleter's TombstoneTTL. A running
-- subscription that finds its group unregistered stops when a tombstone is there, and
-- registers the group again when none is: its state vanished, it was not deleted. The key
-- expires with its latest tombstone, and registering the group again removes its own.

-- tombstoned reports whether group has a live tombstone in the ZSET tombs.
local function tombstoned(tombs, group, now)
  local at = redis.call('ZSCORE', tombs, group)
  return at ~= false and tonumber(at) > now
end

-- tombstone records that group was deleted, until now + ttl ms; it drops the tombstones that
-- expired (as many as there are: one per group deleted in a TombstoneTTL) and lets the key
-- live as long as its latest one.
local function tombstone(tombs, group, now, ttl)
  redis.call('ZREMRANGEBYSCORE', tombs, '-inf', now)
  redis.call('ZADD', tombs, now + ttl, group)
  redis.call('PEXPIREAT', tombs, redis.call('ZRANGE', tombs, -1, -1, 'WITHSCORES')[2])
end

-- Publish lanes (backendkit.Lanes). A publish resent by the Redis client after a lost reply
-- must store nothing twice: each Publish call of a backend runs on a lane with a token, and
-- the publish script keeps the lane's record in a field "p:<instance>:<n>" of the topic's meta
-- HASH, "token:<the call's reply>:<ms of the call>". A lane runs one call at a time, so a
-- resend finds its own token there and gets the same reply back; the records are as many as a
-- process's concurrent calls, never one per call.
-- LANE_IDLE_MS is how long a publish lane's record outlives its last call: far longer than
-- any client resend, which follows its call within seconds.
local LANE_IDLE_MS = 3600000

-- sweep_lanes takes one bounded step of HSCAN over meta's lane records ("p:..." fields, whose
-- values end with ":<ms>"), from the cursor kept in meta's "sweep" field, and deletes those
-- idle for LANE_IDLE_MS: the records of processes that died. A lane's first call (token "1")
-- runs it.
local function sweep_lanes(meta, now)
  local res = redis.call('HSCAN', meta, redis.call('HGET', meta, 'sweep') or '0', 'MATCH', 'p:*', 'COUNT', 64)
  local idle = {}
  for i = 1, #res[2], 2 do
    local at = tonumber(string.match(res[2][i + 1], ':(%d+)$') or '0')
    if at < now - LANE_IDLE_MS then idle[#idle + 1] = res[2][i] end
  end
  if #idle > 0 then call_chunked('HDEL', meta, idle, 1) end
  redis.call('HSET', meta, 'sweep', res[1])
end
