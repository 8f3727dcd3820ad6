-- release.lua: one bounded step of finishing group deletes (deletegroup.lua): release up to N
-- dead letters of a deleted group's tomb; while the topic has no group, trim up to N entries
-- published while it had groups (up to backlog_from: they are no backlog), and
-- once neither is left and no backlog either, unlink every key of the topic; with
-- delete-on-ack and groups left, delete those of up to N entries of the walk that no group
-- needs any more (the deleted group held them back).
--
-- KEYS[1..8] -> the topic's keys (lib.lua's topic_keys)
-- KEYS[9] -> the group's tomb (STREAM dead_gone); any key of the topic when ARGV[1] is ''
-- ARGV[1] -> group ('': none, trim only)
-- ARGV[2] -> N
-- ARGV[3] -> '1': delete-on-ack retention
-- ARGV[4] -> the walk's start ('-' or '(' id; '': no walk)
-- ARGV[5] -> the walk's end (an ID)
-- ARGV[6] -> the backlog ttl in ms
-- Returns {more, walk, next}: more 1 when this group's work is not done; walk where the walk
-- goes on ('' done); next another group whose delete is unfinished ('' none).

local k = topic_keys()
k.dead_gone = KEYS[9]
drain_ok(k.dead_refs)
local group, budget = ARGV[1], tonumber(ARGV[2])
local more = 0
local groups = groups_of(k)
if group ~= '' then
  if redis.call('EXISTS', k.dead_gone) == 1 then
    local ids = release_dead(k, k.dead_gone, budget)
    budget = budget - #ids
    if ARGV[3] == '1' then xdel(k, unneeded(k, ids, groups)) end
  end
  if redis.call('XLEN', k.dead_gone) == 0 then
    redis.call('DEL', k.dead_gone)
    redis.call('SREM', k.deleting, group)
  else
    more = 1
  end
end

local walk = ''
if #groups == 0 then
  local from = redis.call('HGET', k.meta, 'backlog_from')
  if from and budget > 0 then
    local ids = {}
    for _, e in ipairs(redis.call('XRANGE', k.stream, '-', from, 'COUNT', budget)) do ids[#ids + 1] = e[1] end
    xdel(k, ids)
  end
  local trim, gone = settle_topic(k, ARGV[6])
  if gone then return {0, '', ''} end
  more = math.max(more, trim)
elseif ARGV[4] ~= '' then
  walk = ARGV[4]
  if budget > 0 then
    local ids = {}
    for _, e in ipairs(redis.call('XRANGE', k.stream, ARGV[4], ARGV[5], 'COUNT', budget)) do ids[#ids + 1] = e[1] end
    xdel(k, unneeded(k, ids, groups))
    walk = ''
    if #ids == budget then walk = '(' .. ids[#ids] end
  end
  if walk ~= '' then more = 1 end
end
local nxt = redis.call('SRANDMEMBER', k.deleting)
if nxt == group then nxt = false end
return {more, walk, nxt or ''}
