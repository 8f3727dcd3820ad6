-- messages.lua: one page of a group's messages in one state, after a cursor. Read-only.
--
-- ready: due retries (the retry ZSET up to now, by (due, padded id)) merged with the unread
--   entries after the group's position that are due (XRANGE; delayed ones, and those an
--   operator deleted, left out), by (due time, ID). Cursor: the last retry listed (score,
--   member) and the last unread entry passed.
-- delayed: retries not due (the retry ZSET after now) merged with unread entries not due (the
--   topic's delayed ZSET after now, those after the group's position), by (due time, ID).
--   Cursor: the last of each listed (score, member).
-- pending: in lease expiry order, as leases go in streams: per consumer. An entry expires its
--   holder's lease (leases HASH, or the orphan lease) after it was last claimed or extended,
--   which its PEL idle time tells. The consumers but the parking one are ordered by the
--   deadline of their first entry (by ID), then by name; each one's entries by ID (a
--   heartbeat extends all that a consumer holds at once). Cursor: the last listed's consumer,
--   with the deadline it was ordered by, and id, and the consumers listed whole, which later
--   pages leave out: a consumer whose deadline moves between two pages (it claimed, extended
--   or acked) is listed where it then stands, never twice.
-- dead: the dead-letter stream in order. Cursor: the last dead-letter entry ID listed.
-- Each source is read from its cursor, COUNT at a time: a page costs O(count · log N). The
-- pending state adds, per page, O(consumers · log N): one XPENDING summary, one HMGET of
-- leases and one XPENDING of each consumer's first entry. A group has few consumers (Reclaim
-- removes idle ones), so that is read whole.
--
-- KEYS[1..16] -> inspect.lua's inspect_keys
-- ARGV[1] -> group
-- ARGV[2] -> the parking consumer's name
-- ARGV[3] -> state: 'ready', 'delayed', 'pending' or 'dead'
-- ARGV[4] -> count
-- ARGV[5] -> the orphan lease in ms (a consumer without a lease record)
-- ARGV[6..9] -> the cursor's parts ('' none): ready: retry score, retry member, unread id;
--   delayed: retry score, retry member, delayed score, delayed member; pending: deadline ms,
--   consumer, id, the consumers listed whole (joined by newlines);
--   dead: dead-letter entry id
-- Returns {more, part1, part2, part3, part4, msg...} (msg: inspect.lua's msg), or an error
-- reply starting 'NOGROUP relq:' when the group is not registered.

local k = inspect_keys()
k.group, k.parked = ARGV[1], ARGV[2]
local state, n, orphan = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local c = {ARGV[6], ARGV[7], ARGV[8], ARGV[9]}
local me = find_group(k)
if not me then return redis.error_reply('NOGROUP relq: group not registered') end
local now = now_ms()
local out = {0, c[1], c[2], c[3], c[4]}

-- merge takes up to n candidates ({due, key, ...}) of two sources, each in its own order,
-- the lower (due, key) of the two heads first, so that each source's taken ones are the
-- first of it and its cursor can go on after the last. It returns them and how many of each.
local function merge(a, b)
  local i, j, taken = 1, 1, {}
  while #taken < n and (i <= #a or j <= #b) do
    local x, y = a[i], b[j]
    if not y or (x and (x.due < y.due or (x.due == y.due and bytes_less(x.key, y.key)))) then
      taken[#taken + 1] = x
      i = i + 1
    else
      taken[#taken + 1] = y
      j = j + 1
    end
  end
  return taken, i - 1, j - 1
end

-- retries reads up to n members of the retry ZSET from rank start, stopping after now when
-- due: candidates, and whether the source ended.
local function retries(start, due)
  local r = redis.call('ZRANGE', k.retry, start, start + n - 1, 'WITHSCORES')
  local cands, ended = {}, #r < 2 * n
  for i = 1, #r, 2 do
    local score = tonumber(r[i + 1])
    if due and score > now then
      ended = true
      break
    end
    cands[#cands + 1] = {due = score, key = r[i], pos = {r[i + 1], r[i]}, retry = true}
  end
  return cands, ended
end

-- marked returns, per id, whether an operator deleted it (':d') and made it due (':r'): two
-- values per id.
local function marked(ids)
  local m = {}
  for _, id in ipairs(ids) do
    m[#m + 1] = pad(id) .. ':d'
    m[#m + 1] = pad(id) .. ':r'
  end
  if #m == 0 then return {} end
  return call_ids('ZMSCORE', k.marks, {}, m)
end

if state == 'ready' or state == 'delayed' then
  local a, a_end, b, b_end, b_last
  if state == 'ready' then
    a, a_end = retries(c[1] ~= '' and zset_after(k.retry, c[1], c[2]) or 0, true)
    -- Unread entries after the group's position and the cursor.
    local start = me.last
    if c[3] ~= '' and id_cmp(c[3], start) > 0 then start = c[3] end
    local r = redis.call('XRANGE', k.stream, '(' .. start, '+', 'COUNT', n)
    b_end = #r < n
    local ids = {}
    for i, e in ipairs(r) do ids[i] = e[1] end
    local dues = #ids > 0 and call_ids('ZMSCORE', k.delayed, {}, ids) or {}
    local marks = marked(ids)
    b = {}
    for i, e in ipairs(r) do
      local due = dues[i] and tonumber(dues[i]) or published_at(e[1], now)
      if marks[2 * i] then due = published_at(e[1], now) end
      if not marks[2 * i - 1] and due <= now then
        b[#b + 1] = {due = due, key = pad(e[1]), id = e[1], fields = e[2], pos = {e[1]}}
      end
    end
    if #r > 0 then b_last = {r[#r][1]} end
  else
    local start = redis.call('ZCOUNT', k.retry, '-inf', now)
    if c[1] ~= '' then start = math.max(start, zset_after(k.retry, c[1], c[2])) end
    a, a_end = retries(start, false)
    -- The topic's delayed entries not due, those after the group's position.
    start = redis.call('ZCOUNT', k.delayed, '-inf', now)
    if c[3] ~= '' then start = math.max(start, zset_after(k.delayed, c[3], c[4])) end
    local r = redis.call('ZRANGE', k.delayed, start, start + n - 1, 'WITHSCORES')
    b_end = #r < 2 * n
    local ids = {}
    for i = 1, #r, 2 do ids[#ids + 1] = r[i] end
    local marks = marked(ids)
    b = {}
    for i, id in ipairs(ids) do
      if id_cmp(id, me.last) > 0 and not marks[2 * i - 1] and not marks[2 * i] then
        local fields = body(k, id)
        if fields then
          b[#b + 1] = {due = tonumber(r[2 * i]), key = pad(id), id = id, fields = fields, pos = {r[2 * i], id}}
        end
      end
    end
    if #r > 0 then b_last = {r[#r], r[#r - 1]} end
  end

  local taken, na, nb = merge(a, b)
  for _, x in ipairs(taken) do
    if x.retry then
      -- Its delivery count; a schedule whose entry left the PEL since is skipped.
      local id = unpad(x.key)
      local p = redis.call('XPENDING', k.stream, k.group, id, id, 1)[1]
      if p and p[2] == k.parked then out[#out + 1] = waiting_msg(k, id, tonumber(p[4]), x.due, now) end
    else
      out[#out + 1] = waiting_msg(k, x.id, 0, x.due, now, x.fields)
    end
  end
  -- Each source goes on after the last it listed; the unread one after the last it read when
  -- it listed all it found there.
  if na > 0 then out[2], out[3] = a[na].pos[1], a[na].pos[2] end
  local pos = nb > 0 and b[nb].pos
  if nb == #b and b_last then pos = b_last end
  if pos and state == 'ready' then out[4] = pos[1] end
  if pos and state == 'delayed' then out[4], out[5] = pos[1], pos[2] end
  out[1] = (a_end and na == #a and b_end and nb == #b) and 0 or 1
  return out
end

if state == 'pending' then
  local holders, names = {}, {}
  for _, cs in ipairs(redis.call('XPENDING', k.stream, k.group)[4] or {}) do
    if cs[1] ~= k.parked then
      holders[#holders + 1] = {name = cs[1]}
      names[#names + 1] = cs[1]
    end
  end
  local leases = #names > 0 and call_ids('HMGET', k.leases, {}, names) or {}
  for i, h in ipairs(holders) do
    local e = redis.call('XPENDING', k.stream, k.group, '-', '+', 1, h.name)[1]
    h.deadline = now - (e and tonumber(e[3]) or 0) + tonumber(leases[i] or orphan)
  end
  local function before(a, b)
    if a.deadline ~= b.deadline then return a.deadline < b.deadline end
    return bytes_less(a.name, b.name)
  end
  -- The consumers already listed whole (the cursor's fourth part, names joined by newlines) are
  -- left out, whatever their deadline is now: a deadline recomputed from idle times can
  -- move by a millisecond between pages (or by a heartbeat), and must neither list a
  -- consumer again nor pass one over. The cursor's consumer goes first, after its id; the
  -- others by (deadline, name).
  local done = {}
  for name in string.gmatch(c[4], '[^\n]+') do done[name] = true end
  table.sort(holders, before)
  local order = {}
  for _, h in ipairs(holders) do
    if c[2] ~= '' and h.name == c[2] then
      h.from = c[3] ~= '' and ('(' .. c[3]) or '-'
      table.insert(order, 1, h)
    elseif not done[h.name] then
      order[#order + 1] = h
    end
  end
  local listed = c[4]
  out[5] = listed
  for _, h in ipairs(order) do
    local left = n - (#out - 5)
    if left <= 0 then break end
    local r = redis.call('XPENDING', k.stream, k.group, h.from or '-', '+', left, h.name)
    for _, e in ipairs(r) do
      out[#out + 1] = pending_msg(k, e[1], h.name, tonumber(e[4]), tonumber(e[3]), now, orphan)
      out[2], out[3], out[4] = string.format('%d', h.deadline), h.name, e[1]
    end
    if #r == left then
      out[1] = 1
    else -- listed whole: the next consumer's entries follow
      listed = listed == '' and h.name or (listed .. '\n' .. h.name)
      out[5] = listed
    end
  end
  return out
end

-- dead
local start = c[1] ~= '' and ('(' .. c[1]) or '-'
local r = redis.call('XRANGE', k.dead, start, '+', 'COUNT', n)
for _, e in ipairs(r) do
  out[#out + 1] = dead_msg(e[2])
  out[2] = e[1]
end
if #r == n then out[1] = 1 end
return out
