-- registry.lua: what the publish.lua of the adapters that are given the groups to route to,
-- with their keys (list, zset; backendkit.Registry is the Go side), share: the registry check,
-- the batch key, and storing the bodies. Prepended to those adapters' scripts after
-- common.lua. It declares no keys of its own: begin_publish reads the layout the two
-- publish.lua headers share (KEYS[1] the ID counter, KEYS[4] the registry, KEYS[#KEYS] the
-- batch key; ARGV[1] the default group, ARGV[2] G, ARGV[3 .. 2+G] the group names, then the
-- messages).

-- stale_groups checks names, the groups the caller routes to, against the topic's registry SET
-- key. With no group registered, names must be exactly {default}, which is then registered, so
-- nothing published is dropped. It returns nil when names are right; else, having written
-- nothing, the reply for the caller to retry with: {0, registered groups...} ({0} when none is).
local function stale_groups(key, default, names)
  local card = redis.call('SCARD', key)
  if card == 0 then
    if #names ~= 1 or names[1] ~= default then return {0} end
    redis.call('SADD', key, default)
    return nil
  end
  local same = card == #names
  for i = 1, #names do
    if not same then break end
    same = redis.call('SISMEMBER', key, names[i]) == 1
  end
  if same then return nil end
  local m = redis.call('SMEMBERS', key)
  table.insert(m, 1, 0)
  return m
end

-- batch_done returns the reply an earlier run of this very publish left in its batch key, or
-- nil. The Redis client resends a command whose reply it lost (a connection dropped after
-- Redis ran it); the resent script then stores nothing a second time and returns the same IDs.
local function batch_done(batch)
  local last = redis.call('GET', batch)
  if last then return {1, tonumber(last)} end
  return nil
end

-- batch_remember records a publish's reply under its batch key for a minute, longer than
-- any client retry.
local function batch_remember(batch, last)
  redis.call('SET', batch, last, 'PX', 60000)
end

-- begin_publish starts a publish.lua whose messages take width ARGV values each. It returns
-- the reply to return at once (this batch ran already, or the caller's group list is stale),
-- or nil and the batch: ng groups, base (the ARGV index of the first message), n messages,
-- last (the IDs are last-n+1 .. last, taken with one INCRBY), now (Redis time) and its key.
local function begin_publish(width)
  local batch = KEYS[#KEYS]
  local done = batch_done(batch)
  if done then return done end
  local ng = tonumber(ARGV[2])
  local names = {}
  for i = 1, ng do names[i] = ARGV[2 + i] end
  local stale = stale_groups(KEYS[4], ARGV[1], names)
  if stale then return stale end
  local base = 3 + ng
  local n = (#ARGV - base + 1) / width
  return nil, {ng = ng, base = base, n = n, last = redis.call('INCRBY', KEYS[1], n),
    now = now_ms(), key = batch}
end

-- end_publish records the batch's reply under its key and returns it.
local function end_publish(b)
  batch_remember(b.key, b.last)
  return {1, b.last}
end

-- store_bodies writes a batch's bodies (a flat id, envelope list) and, when they go to more
-- than one group, each one's reference count: one HSET per key and slice.
local function store_bodies(bodies_key, refs_key, bodies, ng)
  call_chunked('HSET', bodies_key, bodies, 2)
  if ng < 2 then return end
  local refs = {}
  for i = 1, #bodies, 2 do
    refs[#refs + 1] = bodies[i]
    refs[#refs + 1] = ng
  end
  call_chunked('HSET', refs_key, refs, 2)
end
