-- inspect.lua: helpers of the Admin scripts that show and change single messages (messages,
-- message, deletemessage, runmessage), linked into them like lib.lua's. The keys table k is
-- inspect_keys's.

-- inspect_keys gathers the keys of keys.go's inspectKeys: the topic's, then the group's.
local function inspect_keys()
  local k = topic_keys()
  k.retry, k.pending, k.leases, k.dead, k.dead_index, k.dead_order, k.marks, k.wake =
    KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16]
  return k
end

-- body returns the fields of the stream's entry id, or false when it is gone.
local function body(k, id)
  local e = redis.call('XRANGE', k.stream, id, id)[1]
  return e and e[2] or false
end

-- msg is one message as messages.go decodes it: {id, state, attempts, due ms (-1: none),
-- consumer, lease left ms, claimed at ms (-1), reason, dead at ms (-1), fields (false: gone)}.
local function msg(id, state, attempts, fields)
  return {id, state, attempts, -1, '', 0, -1, '', -1, fields}
end

-- pending_msg is a delivery that consumer holds: its lease is the consumer's (leases) or the
-- orphan lease, less its PEL idle time.
local function pending_msg(k, id, consumer, count, idle, now, orphan)
  local m = msg(id, 'pending', count, body(k, id))
  local since = redis.call('ZSCORE', k.pending, id)
  m[5] = consumer
  m[6] = tonumber(redis.call('HGET', k.leases, consumer) or orphan) - idle
  m[7] = since and tonumber(since) or (now - idle)
  return m
end

-- waiting_msg is a parked retry or an unread entry, due at due: delayed or ready.
local function waiting_msg(k, id, count, due, now, fields)
  if due > now then
    local m = msg(id, 'delayed', count, fields or body(k, id))
    m[4] = due
    return m
  end
  return msg(id, 'ready', count, fields or body(k, id))
end

-- dead_msg is a dead letter from its record: relq's 12 header strings (_relq_id, id,
-- _relq_reason, reason, _relq_attempts, n, _relq_dead_at, ms, topic and group), then the
-- entry's own fields.
local function dead_msg(rec)
  local fields = {}
  for i = 13, #rec do fields[#fields + 1] = rec[i] end
  local m = msg(rec[2], 'dead', tonumber(rec[6]), #fields > 0 and fields)
  m[8] = rec[4]
  m[9] = tonumber(rec[8])
  return m
end

-- locate finds id in the group me ({name, last}): a dead letter ({kind = 'dead', dl, rec});
-- in the PEL, parked ({kind = 'parked', count, due}) or held ({kind = 'pending', consumer,
-- count, idle}); or unread ({kind = 'unread', due, fields}: after the group's position, in the
-- stream, not deleted by an operator). nil when the group does not hold it.
local function locate(k, me, id, now)
  local dl = redis.call('HGET', k.dead_index, id)
  if dl then
    local e = redis.call('XRANGE', k.dead, dl, dl)[1]
    if e then return {kind = 'dead', dl = dl, rec = e[2]} end
  end
  local p = redis.call('XPENDING', k.stream, k.group, id, id, 1)[1]
  if p then
    if p[2] == k.parked then
      local s = redis.call('ZSCORE', k.retry, pad(id))
      return {kind = 'parked', count = tonumber(p[4]), due = s and tonumber(s) or now}
    end
    return {kind = 'pending', consumer = p[2], count = tonumber(p[4]), idle = tonumber(p[3])}
  end
  if id_cmp(id, me.last) <= 0 then return nil end
  local fields = body(k, id)
  if not fields then return nil end
  local m = redis.call('ZMSCORE', k.marks, pad(id) .. ':d', pad(id) .. ':r')
  if m[1] then return nil end
  local due = redis.call('ZSCORE', k.delayed, id)
  if m[2] or not due then
    due = published_at(id, now)
  else
    due = tonumber(due)
  end
  return {kind = 'unread', due = due, fields = fields}
end
