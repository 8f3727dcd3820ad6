-- publish.lua: append a batch of messages to a topic's stream, in one round trip.
--
-- Every consumer group of the stream receives every entry. While the stream has no group the
-- entries are the topic's backlog, which the first group registered takes (register in
-- lib.lua): the stream keeps at most the backlog limit, the newest (XTRIM MAXLEN =, exact), and
-- the topic's keys expire the backlog's ttl after this publish. An exact trim costs O(entries
-- removed): once the backlog is at its limit, this batch's length. A stream longer than the
-- limit plus this batch (entries published while the topic had groups, still to trim, or a
-- limit lowered) loses at most the batch and ARGV[7] more per publish, so no publish is O(N).
-- The first entry gets an automatic ID ("<ms>-<seq>"); the others get the same ms and the
-- following seqs, so the batch shares one publish time, which delays count from: a delayed
-- message's due time (ms + delay) goes to the topic's delayed ZSET (one ZADD per call), and
-- readers park it until then.
--
-- A resent call (the client lost the reply and sent it again) appends nothing twice: each
-- Publish call of a Backend runs on a lane (backendkit.Lanes), a field of the topic's meta
-- HASH that holds the lane's last call, "token:ids:ms"; a lane runs one call at a time, so a
-- resend finds its own token there and returns the same IDs. ids is "<first ID>/<count>" when
-- the IDs follow each other (always, unless their sequence passed 2^52, after an entry another
-- program added with such an ID), else the IDs joined by ','. The records are one per lane, never one per call; a lane's
-- first call sweeps records idle for an hour (common.lua's sweep_lanes), which a process that
-- died leaves behind. They go with meta: with the topic's other keys.
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys): stream, published, delayed, ...
-- ARGV[1] -> the lane's meta field
-- ARGV[2] -> this call's token on the lane
-- ARGV[3] -> trim strategy: '' (none), 'MAXLEN' or 'MINID'
-- ARGV[4] -> MAXLEN: the length; MINID: the age in ms of the oldest entry to keep
-- ARGV[5] -> the backlog limit (entries)
-- ARGV[6] -> the backlog ttl in ms
-- ARGV[7] -> the most entries a publish trims from the backlog beyond its own batch
-- ARGV[8] -> what a batch the backlog cannot hold does: '0' drops the backlog's oldest (counted
--            in meta's backlog_dropped), '1' refuses the batch (pubsub.BacklogRefuse)
-- ARGV[9] -> F, the number of fields of an entry
-- ARGV[10 .. 9+F] -> the field names
-- then per message: delay in ms (0: due now), F field values
-- Per call, beyond the XADDs: one HGET and one HSET of meta (the lane), one TIME, one XINFO
-- GROUPS, one PTTL of the stream, one EXISTS of the ephemeral and deleting keys (their
-- ZRANGEBYSCORE and SRANDMEMBER only when either exists).
-- Returns {ids, tidy, dropped}: ids the entries' IDs in order; tidy the groups the caller
-- should delete (deletegroup.lua's 'expired' mode: an ephemeral group whose members all
-- expired, or a group whose delete is unfinished), and '' when entries published while the
-- topic had groups are still to trim (release.lua); dropped how many of the backlog's oldest
-- entries this call trimmed. A batch the backlog refuses (ARGV[8] '1'): the error RELQFULL,
-- with nothing written.

local k = topic_keys()
local lane = redis.call('HGET', k.meta, ARGV[1])
if lane then
  local token, done = string.match(lane, '^(%d+):([^:]*):%d+$')
  if token == ARGV[2] then
    local ids = {}
    local m, s, count = string.match(done, '^(%d+)%-(%d+)/(%d+)$')
    if m then
      for j = 0, tonumber(count) - 1 do ids[#ids + 1] = m .. '-' .. string.format('%d', tonumber(s) + j) end
    else
      for id in string.gmatch(done, '[^,]+') do ids[#ids + 1] = id end
    end
    return {ids, {}, 0}
  end
end
local now = now_ms()
local groups = groups_of(k)
local grouped = #groups > 0

local f = tonumber(ARGV[9])
local first = 10 + f
local per = 1 + f
local n = (#ARGV - first + 1) / per
if not grouped and ARGV[8] == '1' and backlog_size(k) + n > tonumber(ARGV[5]) then
  return redis.error_reply('RELQFULL the topic has no group and its backlog cannot hold the batch')
end
local ids, due = {}, {}
local ms, seq
local consecutive = true
for j = 0, n - 1 do
  local a = first + j * per
  local fields = {}
  for i = 1, f do
    fields[#fields + 1] = ARGV[9 + i]
    fields[#fields + 1] = ARGV[a + i]
  end
  local id
  if j == 0 or seq + j >= 2^52 then
    id = redis.call('XADD', k.stream, '*', unpack(fields))
    if j == 0 then
      local m, s = id_parts(id)
      ms, seq = m, tonumber(s)
    else
      consecutive = false
    end
  else
    id = ms .. '-' .. string.format('%d', seq + j)
    redis.call('XADD', k.stream, id, unpack(fields))
  end
  ids[#ids + 1] = id
  local delay = tonumber(ARGV[a])
  if delay > 0 then
    due[#due + 1] = tonumber(ms) + delay
    due[#due + 1] = id
  end
end
if #due > 0 then call_chunked('ZADD', k.delayed, due, 2) end
redis.call('INCRBY', k.published, n)
local record = table.concat(ids, ',')
if consecutive then record = ids[1] .. '/' .. n end
redis.call('HSET', k.meta, ARGV[1], ARGV[2] .. ':' .. record .. ':' .. now)
if ARGV[2] == '1' then sweep_lanes(k.meta, now) end

if ARGV[3] == 'MAXLEN' then
  redis.call('XTRIM', k.stream, 'MAXLEN', '~', ARGV[4])
elseif ARGV[3] == 'MINID' then
  redis.call('XTRIM', k.stream, 'MINID', '~', math.max(0, tonumber(ms) - tonumber(ARGV[4])))
end

-- meta, written above, expires with the topic's other keys when they do.
local tidy, dropped = {}, 0
if not grouped then
  -- The backlog: bounded in length, and in time while no group registers. The oldest entries
  -- trimmed that were published while the topic had groups (up to backlog_from) are no
  -- backlog: only the others count as dropped.
  local length = redis.call('XLEN', k.stream)
  local keep = math.max(tonumber(ARGV[5]), length - n - tonumber(ARGV[7]))
  local from = redis.call('HGET', k.meta, 'backlog_from')
  if length > keep then
    local older = 0
    if from then older = #redis.call('XRANGE', k.stream, '-', from, 'COUNT', length - keep) end
    dropped = redis.call('XTRIM', k.stream, 'MAXLEN', '=', keep) - older
    if dropped > 0 then redis.call('HINCRBY', k.meta, 'backlog_dropped', dropped) else dropped = 0 end
  end
  for _, key in ipairs({k.stream, k.published, k.delayed, k.meta}) do redis.call('PEXPIRE', key, ARGV[6]) end
  if from and redis.call('XRANGE', k.stream, '-', from, 'COUNT', 1)[1] then tidy[#tidy + 1] = '' end
elseif redis.call('PTTL', k.stream) > 0 then
  -- The keys expire while every group is ephemeral (Join). A group another program created on
  -- a backlog (watermill-redisstream's XGROUP CREATE) is durable: the topic lives for good.
  local names = {}
  for i, g in ipairs(groups) do names[i] = g.name end
  local durable = false
  for _, s in ipairs(call_ids('ZMSCORE', k.ephemeral, {}, names)) do
    if not s then durable = true end
  end
  if durable then
    for _, key in ipairs({k.stream, k.published, k.delayed, k.dead_refs, k.meta, k.paused, k.ephemeral, k.deleting}) do
      redis.call('PERSIST', key)
    end
  else
    keep_ttl(k, {k.delayed, k.meta})
  end
end
if redis.call('EXISTS', k.ephemeral, k.deleting) > 0 then
  -- The entries' time is the Redis clock's now (or a little ahead, after a clock step back).
  local expired = redis.call('ZRANGEBYSCORE', k.ephemeral, '-inf', '(' .. ms, 'LIMIT', 0, 1)[1]
  if expired then tidy[#tidy + 1] = expired end
  local unfinished = redis.call('SRANDMEMBER', k.deleting)
  if unfinished then tidy[#tidy + 1] = unfinished end
end
return {ids, tidy, dropped}
