-- nack.lua: return held deliveries to ready (now or after a delay), release them, or
-- dead-letter them. Fenced: an item counts only if the consumer holds that attempt. Where a
-- message goes back in ready is the store's rule (store_back).
--
-- KEYS -> the topic's 5 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> consumer nacking
-- ARGV[2] -> max deliveries (0: no limit)
-- ARGV[3+5i .. 7+5i] -> item i: id, attempt, delay ms, mode (0 retry, 1 dead-letter, 2 release), reason
-- Returns {requeued, dead_lettered, stale}.

local k = keys_at(TOPIC_KEYS + 1)
drain_ok(k.meta)
local consumer, max = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local ids, items, seen = {}, {}, {}
for i = 3, #ARGV, 5 do
  local id = ARGV[i]
  if not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
    items[#ids] = {attempt = tonumber(ARGV[i + 1]), delay = tonumber(ARGV[i + 2]), mode = ARGV[i + 3], reason = ARGV[i + 4]}
  end
end
local stale = (#ARGV - 2) / 5 - #ids
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
store_back(k, back, now)
keep_attempts(k, back)
bury(k, dead, now)
count(k, 'nacked', nacked)
count(k, 'dead_lettered', #dead)
count(k, 'stale_nacks', stale)
return {#back, #dead, stale}
