package partition

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/internal/keys"
)

// The subscriptions of a group share its partitions without a coordinator: each one calls
// Sync on every heartbeat, and one script on the topic's own slot renews its membership,
// drops members whose lease ended, and moves partitions so that every member holds its quota.
// Members are ranked by name; with n members the first P mod n hold P/n + 1 partitions and the
// others P/n, so shares differ by at most one. A member keeps what it holds up to its quota
// (a join moves only the partitions the newcomer needs), releases the rest, and takes
// partitions nobody live holds. A partition changes hands only through the owners hash, so
// it has one owner at a time, and each change increments its epoch, the fencing token of the
// new owner.

// AssignKeys names the Redis keys of one group's assignment, all under the topic's tag.
type AssignKeys struct {
	Members string // ZSET member -> lease deadline (ms, Redis clock)
	Owners  string // HASH partition -> member
	Epochs  string // HASH partition -> ownership changes
}

// GroupAssignKeys returns the assignment keys of group on the topic whose keys carry tag.
func GroupAssignKeys(tag, group string) AssignKeys {
	return AssignKeys{
		Members: keys.Join(tag, "pg", group, "members"),
		Owners:  keys.Join(tag, "pg", group, "owners"),
		Epochs:  keys.Join(tag, "pg", group, "epochs"),
	}
}

// Owned is a partition a member holds, with the epoch it took it in.
type Owned struct {
	Partition int
	Epoch     int64
}

// Assignment is what Sync left a member with.
type Assignment struct {
	Members int     // live members of the group, this one included
	Quota   int     // the partitions this member should hold
	Owned   []Owned // the partitions it holds now, by number; fewer than Quota while others release theirs
}

// syncScript: KEYS as AssignKeys; ARGV[1] member, ARGV[2] lease ms, ARGV[3] P. Its work is bounded by
// P (at most MaxCount) and the group's members, never by the messages queued.
var syncScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me, lease, p = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + lease, me)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(members)
local n, rank = #members, 0
local live = {}
for i, m in ipairs(members) do
  live[m] = true
  if m == me then rank = i end
end
local quota = math.floor(p / n)
if rank <= p % n then quota = quota + 1 end

local owners = redis.call('HGETALL', KEYS[2])
local owner = {}
for i = 1, #owners, 2 do owner[tonumber(owners[i])] = owners[i + 1] end
local mine, free = {}, {}
for i = 0, p - 1 do
  local o = owner[i]
  if o == me then
    mine[#mine + 1] = i
  elseif o == nil or not live[o] then
    free[#free + 1] = i
  end
end
while #mine > quota do
  redis.call('HDEL', KEYS[2], mine[#mine])
  mine[#mine] = nil
end
local k = 1
while #mine < quota and k <= #free do
  redis.call('HSET', KEYS[2], free[k], me)
  redis.call('HINCRBY', KEYS[3], free[k], 1)
  mine[#mine + 1] = free[k]
  k = k + 1
end
table.sort(mine)
local out = {n, quota}
for _, i in ipairs(mine) do
  out[#out + 1] = i
  out[#out + 1] = tonumber(redis.call('HGET', KEYS[3], i))
end
-- The group's keys outlive a member's lease, refreshed by every sync; they go with the last
-- member (leaveScript) or within a minute of the last sync.
local ttl = math.min(math.max(lease * 2, 1000), 50000)
for _, key in ipairs(KEYS) do
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
return out
`)

// leaveScript: KEYS as AssignKeys; ARGV[1] member, ARGV[2] P.
var leaveScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('ZCARD', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  return 0
end
for i = 0, tonumber(ARGV[2]) - 1 do
  if redis.call('HGET', KEYS[2], i) == ARGV[1] then redis.call('HDEL', KEYS[2], i) end
end
return 0
`)

// Sync renews member's place in the group for lease and moves partitions toward every
// member's quota. Call it at least every lease/3: a member that misses its lease loses its
// partitions to the others' next Sync.
func Sync(ctx context.Context, c redis.Scripter, k AssignKeys, member string, p int, lease time.Duration) (Assignment, error) {
	res, err := syncScript.Run(ctx, c, []string{k.Members, k.Owners, k.Epochs}, member, lease.Milliseconds(), p).Int64Slice()
	if err != nil {
		return Assignment{}, fmt.Errorf("relq: partition assignment of %s: %w", member, err)
	}
	a := Assignment{Members: int(res[0]), Quota: int(res[1])}
	for i := 2; i+1 < len(res); i += 2 {
		a.Owned = append(a.Owned, Owned{Partition: int(res[i]), Epoch: res[i+1]})
	}
	return a, nil
}

// Leave removes member from the group at once and frees its partitions for the others' next
// Sync, as a subscription that ends cleanly does.
func Leave(ctx context.Context, c redis.Scripter, k AssignKeys, member string, p int) error {
	if err := leaveScript.Run(ctx, c, []string{k.Members, k.Owners, k.Epochs}, member, p).Err(); err != nil {
		return fmt.Errorf("relq: leave the partitions of %s: %w", member, err)
	}
	return nil
}
