-- reclaim.lua: return a group's expired leases to ready (or dead-letter those whose attempts
-- reached the limit), then let the store do its own upkeep (list: promote due delayed
-- messages, lease orphans).
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> max deliveries (0: no limit)
-- ARGV[2] -> orphan lease in ms
-- ARGV[3] -> N, the most ids each step handles
-- ARGV[4] -> group
-- Returns {reclaimed, dead_lettered, orphans, promoted, next, more, expired, trash}: next is
-- the ms until Reclaim has work again: the earliest lease left expires, or (list) the earliest
-- delayed message is due for promotion (-1: neither); more is 1 when N expired leases were
-- found, so more may be waiting; expired is 1 when an ephemeral group of the topic has no
-- live member left, trash 1 when deleted groups' keys wait to be freed: the caller deletes
-- and frees them. A group that is not registered (deleted) holds nothing, and nothing is
-- written.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local max, n = tonumber(ARGV[1]), tonumber(ARGV[3])
local now = now_ms()
local expired = #redis.call('ZRANGE', k.ephemeral, '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, 1)
local trash = redis.call('EXISTS', k.trash)
local _, _, ephemeral = reg_parse(redis.call('HGET', k.registry, ARGV[4]))
if ephemeral == nil then return {0, 0, 0, 0, -1, 0, expired, trash} end
-- Earliest deadline first; leases of one claim or heartbeat share a deadline, and ZSET
-- orders those by member bytes ("10" before "9"), so they are put back in id order.
local found = redis.call('ZRANGE', k.pending, '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, n, 'WITHSCORES')
local order = {}
for i = 1, #found, 2 do order[#order + 1] = {id = found[i], at = tonumber(found[i + 1]), n = tonumber(found[i]) or 0} end
table.sort(order, function(a, b)
  if a.at ~= b.at then return a.at < b.at end
  return a.n < b.n
end)
local lapsed = {}
for i, o in ipairs(order) do lapsed[i] = o.id end
local recs = read_records(k, lapsed)
local back, dead = {}, {}
for i, id in ipairs(lapsed) do
  local r = recs[i] or {attempt = 0, extra = ''}
  if max > 0 and r.attempt >= max then
    dead[#dead + 1] = {id = id, attempt = r.attempt, extra = r.extra,
      reason = 'lease expired after ' .. r.attempt .. ' attempts'}
  else
    back[#back + 1] = {id = id, extra = r.extra, attempt = r.attempt, kind = 'reclaim'}
  end
end
unpend(k, lapsed)
store_back(k, back, now)
keep_attempts(k, back)
bury(k, dead, now)
count(k, 'reclaimed', #back)
count(k, 'dead_lettered', #dead)
local promoted, orphans = store_upkeep(k, now, n, tonumber(ARGV[2]))
local more = 0
if #lapsed == n then more = 1 end
local next, due = next_expiry(k, now), store_next_due(k, now)
if due >= 0 and (next < 0 or due < next) then next = math.max(1, due) end
if ephemeral then keep_expiry(k) end
return {#back, #dead, orphans, promoted, next, more, expired, trash}
