-- publish.lua: append a batch of messages to a topic's stream, in one round trip.
--
-- Every consumer group of the stream receives every entry. When the stream has no group yet,
-- the default group is created first, from the oldest entry, so nothing published is dropped.
-- The first entry gets an automatic ID ("<ms>-<seq>"); the others get the same ms and the
-- following seqs, so the batch shares one publish time, which delays count from: a delayed
-- message's due time (ms + delay) goes to the topic's delayed ZSET (one ZADD per call), and
-- readers park it until then.
--
-- KEYS[1] -> stream (STREAM)
-- KEYS[2] -> published (STRING) the topic's publish counter
-- KEYS[3] -> delayed (ZSET id -> due ms) the topic's delayed entries
-- KEYS[4] -> the default group's counters (HASH)
-- KEYS[5] -> this Publish call's batch key (STRING, 1 min TTL): its IDs, so that a resend of
--            the call by the Redis client after a lost reply appends nothing twice
-- ARGV[1] -> the default group's name
-- ARGV[2] -> trim strategy: '' (none), 'MAXLEN' or 'MINID'
-- ARGV[3] -> MAXLEN: the length; MINID: the age in ms of the oldest entry to keep
-- ARGV[4] -> F, the number of fields of an entry
-- ARGV[5 .. 4+F] -> the field names
-- then per message: delay in ms (0: due now), F field values
-- Returns the IDs of the entries, in order.

local k = {stream = KEYS[1], published = KEYS[2], delayed = KEYS[3], counters = KEYS[4],
  batch = KEYS[5], group = ARGV[1]}
local done = redis.call('GET', k.batch)
if done then
  local ids = {}
  for id in string.gmatch(done, '[^,]+') do ids[#ids + 1] = id end
  return ids
end
if redis.call('EXISTS', k.stream) == 0 or #redis.call('XINFO', 'GROUPS', k.stream) == 0 then
  create_group(k, '0')
end

local f = tonumber(ARGV[4])
local first = 5 + f
local per = 1 + f
local n = (#ARGV - first + 1) / per
local ids, due = {}, {}
local ms, seq
for j = 0, n - 1 do
  local a = first + j * per
  local fields = {}
  for i = 1, f do
    fields[#fields + 1] = ARGV[4 + i]
    fields[#fields + 1] = ARGV[a + i]
  end
  local id
  if j == 0 or seq + j >= 2^52 then
    id = redis.call('XADD', k.stream, '*', unpack(fields))
    if j == 0 then
      local m, s = id_parts(id)
      ms, seq = m, tonumber(s)
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

if ARGV[2] == 'MAXLEN' then
  redis.call('XTRIM', k.stream, 'MAXLEN', '~', ARGV[3])
elseif ARGV[2] == 'MINID' then
  redis.call('XTRIM', k.stream, 'MINID', '~', math.max(0, tonumber(ms) - tonumber(ARGV[3])))
end
redis.call('SET', k.batch, table.concat(ids, ','), 'PX', 60000)
return ids
