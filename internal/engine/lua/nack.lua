-- nack.lua: return held deliveries to ready (now or after a delay), release them, or
-- dead-letter them. Fenced: an item counts only if the consumer holds that attempt. Where a
-- message goes back in ready is the store's rule (store_back).
--
-- KEYS -> the topic's 8 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> consumer nacking
-- ARGV[3] -> max deliveries (0: no limit)
-- ARGV[4+5i .. 8+5i] -> item i: id, attempt, delay ms, mode (0 retry, 1 dead-letter, 2 release), reason
-- Returns {requeued, dead_lettered, stale}. A group that is not registered (deleted) holds
-- nothing: its items are stale, and nothing is written.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local _, _, ephemeral = reg_parse(redis.call('HGET', k.registry, ARGV[1]))
local consumer, max = ARGV[2], tonumber(ARGV[3])
local now = now_ms()
local ids, items, seen = {}, {}, {}
for i = 4, #ARGV, 5 do
  local id = ARGV[i]
  if not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
    items[#ids] = {attempt = tonumber(ARGV[i + 1]), delay = tonumber(ARGV[i + 2]), mode = ARGV[i + 3], reason = ARGV[i + 4]}
  end
end
local stale = (#ARGV - 3) / 5 - #ids
if ephemeral == nil then return {0, 0, stale + #ids} end
local recs = read_records(k, ids)
local held, back, dead = {}, {}, {}
local nacked = 0
for i, id in ipairs(ids) do
  local r, it = recs[i], items[i]
  if not r or r.consumer ~= consumer or r.attempt ~= it.attempt then
    stale = stale + 1
  else
    held[#held + 1] = id
    if it.mode == '2' then
      back[#back + 1] = {id = id, extra = r.extra, attempt = r.attempt - 1, kind = 'release'}
    else
      nacked = nacked + 1
      if it.mode == '1' or (max > 0 and r.attempt >= max) then
        local reason = it.reason
        if reason == '' then reason = 'nacked after ' .. r.attempt .. ' attempts' end
        dead[#dead + 1] = {id = id, attempt = r.attempt, extra = r.extra, reason = reason}
      elseif it.delay > 0 then
        back[#back + 1] = {id = id, extra = r.extra, attempt = r.attempt, kind = 'delay', due = now + it.delay}
      else
        back[#back + 1] = {id = id, extra = r.extra, attempt = r.attempt, kind = 'retry'}
      end
    end
  end
end
unpend(k, held)
k.name = ARGV[1] -- a delayed retry may wake the group's sleeping consumers (store_back)
store_back(k, back, now)
keep_attempts(k, back)
bury(k, dead, now)
count(k, 'nacked', nacked)
count(k, 'dead_lettered', #dead)
count(k, 'stale_nacks', stale)
if ephemeral then keep_expiry(k) end
return {#back, #dead, stale}
