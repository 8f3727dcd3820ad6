-- messages.lua: read one page of a group's messages in one state, in the order they would be
-- delivered (ready), fall due (delayed), expire (pending) or died (dead). Read-only. A page
-- resumes after the cursor, the last entry the page before looked at, wherever that is now:
-- O(page · log² N) on a ZSET; on the list backend's ready LIST, O(depth) at most (store.lua).
-- Ids marked ACKED (deleted, or acked while they waited) are left out.
--
-- KEYS -> the topic's 5 keys, then the group's (engine.lua's keys_at)
-- ARGV[1] -> group
-- ARGV[2] -> state: ready, delayed, pending or dead
-- ARGV[3] -> cursor phase ('': the first page; e for pending and dead, else the store's)
-- ARGV[4] -> cursor score
-- ARGV[5] -> cursor member ('': the start of the phase)
-- ARGV[6] -> count
-- ARGV[7] -> depth: how deep the list backend's ready LIST may be read
-- Returns {now ms, next phase or '' (last page), next score, next member, items...}, 11
-- values per item (admin_out); or an error reply RELQNOGROUP, RELQBADCURSOR or RELQDEEP.

local k = keys_at(TOPIC_KEYS + 1)
if redis.call('HEXISTS', k.registry, ARGV[1]) == 0 then return admin_error('NOGROUP') end
local state, phase, member = ARGV[2], ARGV[3], ARGV[5]
local score = tonumber(ARGV[4])
if not score then return admin_error('BADCURSOR') end
local count, depth = tonumber(ARGV[6]), tonumber(ARGV[7])
-- Hidden ids do not count against a page; this bounds how many one page looks at.
local limit = 10 * count
local now = now_ms()
local items = {}
local np, ns, nm
if state == 'pending' or state == 'dead' then
  if phase == '' then phase = 'e' end
  if phase ~= 'e' then return admin_error('BADCURSOR') end
  local key, field = k.pending, 'deadline'
  if state == 'dead' then key, field = k.dead, 'dead_at' end
  np, ns = admin_zpage(k, key, admin_start(key, score, member, 0), redis.call('ZCARD', key), count, limit,
    function(id, at) return {id = id, state = state, [field] = at} end, false, items)
  if np then np, ns, nm = 'e', np, ns end
else
  if phase == '' then phase = store_first_phase(state) end
  np, ns, nm = store_page(k, state, phase, score, member, count, limit, depth, now, items)
  if type(np) == 'table' then return np end
end
local out = {now, np or '', ns or 0, nm or ''}
admin_out(k, items, admin_prio, out)
return out
