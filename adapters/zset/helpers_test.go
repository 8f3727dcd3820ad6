package zset

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/keys"
	"github.com/stretchr/testify/require"
)

// env is one test's backend on the shared server, under a key prefix of its own.
type env struct {
	*adaptertest.Env
	b *Backend
}

// newEnv returns the env of a backend under a prefix of its own, with opts applied.
func newEnv(t *testing.T, opts ...func(*Options)) *env {
	t.Helper()
	c, prefix := adaptertest.Server(t)
	o := Options{Prefix: prefix}
	for _, f := range opts {
		f(&o)
	}
	b, err := New(c, o)
	require.NoError(t, err)
	return &env{Env: adaptertest.NewEnv(t, c, prefix, b), b: b}
}

// groupKeys are the keys of one group of one topic (see the package doc's key layout): the
// engine's accessors where it has one, the documented name where it has none.
type groupKeys struct {
	eng                                                  engine.GroupKeys
	queue, ready, wake                                   string // the store's
	pending, pendingAt, holders, retries, dead, deadInfo string // the engine's
	counters                                             string
	meta, bodies, refs, registry                         string // the topic's
}

func (e *env) gk(topic, group string) groupKeys {
	k := e.b.e.Keys(topic, group)
	tag := keys.Tag(e.Prefix, topic)
	g := func(name string) string { return keys.Join(tag, "g", group, name) }
	return groupKeys{
		eng:   k,
		queue: k.Store("queue"), ready: k.Store("ready"), wake: k.Store("wake"),
		pending: k.Pending(), pendingAt: g("pending_at"), holders: k.Holders(), retries: k.Retries(),
		dead: k.Dead(), deadInfo: g("dead_info"), counters: g("counters"),
		meta: k.Meta(), bodies: k.Bodies(), refs: k.Refs(), registry: keys.Join(tag, "zregistry"),
	}
}

// ownWake is consumer's own wake-up list.
func (k groupKeys) ownWake(consumer string) string { return ownWake(k.eng, consumer) }

// zrange returns a ZSET's members in order with their scores.
func (e *env) zrange(key string) []redis.Z {
	e.T.Helper()
	v, err := e.C.ZRangeWithScores(e.Ctx, key, 0, -1).Result()
	require.NoError(e.T, err)
	return v
}

// redisNow is the Redis clock in ms, as the scripts read it.
func (e *env) redisNow() float64 {
	e.T.Helper()
	now, err := e.C.Time(e.Ctx).Result()
	require.NoError(e.T, err)
	return float64(now.UnixMilli())
}

// expire moves the lease deadline of id into the past, as if the lease had run out.
func (e *env) expire(topic, group, id string) { e.ExpireLease(e.gk(topic, group).pending, id) }

// record is a parsed holders value: "consumer:attempt:since:due:priority".
type record struct {
	consumer string
	attempt  int
	since    int64 // pending since, ms
	due      int64 // the due time it had when claimed, ms
	priority int
}

// records returns the group's holders records by delivery ID.
func (e *env) records(k groupKeys) map[string]record {
	e.T.Helper()
	out := map[string]record{}
	for id, v := range e.Hash(k.holders) {
		parts := strings.Split(v, ":")
		require.Len(e.T, parts, 5, "holders record %q of %s", v, id)
		var r record
		var err [4]error
		r.consumer = parts[0]
		r.attempt, err[0] = strconv.Atoi(parts[1])
		r.since, err[1] = strconv.ParseInt(parts[2], 10, 64)
		r.due, err[2] = strconv.ParseInt(parts[3], 10, 64)
		r.priority, err[3] = strconv.Atoi(parts[4])
		for _, err := range err {
			require.NoError(e.T, err, "holders record %q of %s", v, id)
		}
		out[id] = r
	}
	return out
}

// holders returns who holds each pending delivery: ID -> "consumer:attempt", the fencing token.
func (e *env) holders(k groupKeys) map[string]string {
	e.T.Helper()
	out := map[string]string{}
	for id, r := range e.records(k) {
		out[id] = r.consumer + ":" + strconv.Itoa(r.attempt)
	}
	return out
}

// wakeMark returns the time (Redis ms) until which group is marked asleep in meta, or 0.
func (e *env) wakeMark(k groupKeys, group string) int64 {
	e.T.Helper()
	v, err := e.C.HGet(e.Ctx, k.meta, "w:"+group).Result()
	if err == redis.Nil {
		return 0
	}
	require.NoError(e.T, err)
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(e.T, err)
	return n
}

func zmember(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// qentry is a member of the claim-order ZSET (queue), parsed: "<due><n><id>" scored by the rank
// PriorityMax - priority, n the letter that gives the ID's length (A: 1 digit).
type qentry struct {
	id       string
	due      int64
	priority int
}

// queue returns the group's queue in claim order.
func (e *env) queue(k groupKeys) []qentry {
	e.T.Helper()
	var out []qentry
	for _, z := range e.zrange(k.queue) {
		m, _ := z.Member.(string)
		require.Greater(e.T, len(m), dueDigits+1, "queue member %q", m)
		due, id := m[:dueDigits], m[dueDigits+1:]
		require.Equal(e.T, byte('A'+len(id)-1), m[dueDigits], "queue member %q: the letter gives the ID's length", m)
		d, err := strconv.ParseInt(due, 10, 64)
		require.NoError(e.T, err)
		_, err = strconv.ParseUint(id, 10, 64)
		require.NoError(e.T, err)
		out = append(out, qentry{id: id, due: d, priority: PriorityMax - int(z.Score)})
	}
	return out
}

// qids returns the delivery IDs of queue entries, in order.
func qids(q []qentry) []string {
	out := make([]string, len(q))
	for i, x := range q {
		out[i] = x.id
	}
	return out
}

// qmem is the queue member of a delivery ID due at due (ms).
func qmem(id string, due int64) string {
	return fmt.Sprintf("%0*d%c%s", dueDigits, due, 'A'+len(id)-1, id)
}

// setQueuedDue gives a queued message another due time, as if it had been due since then.
func (e *env) setQueuedDue(k groupKeys, id string, due int64) {
	e.T.Helper()
	for _, x := range e.queue(k) {
		if x.id == id {
			require.NoError(e.T, e.C.ZRem(e.Ctx, k.queue, qmem(id, x.due)).Err())
			require.NoError(e.T, e.C.ZAdd(e.Ctx, k.queue, zmember(float64(PriorityMax-x.priority), qmem(id, due))).Err())
			return
		}
	}
	require.FailNow(e.T, "not queued", "delivery %s", id)
}

// mem is the ready (due-time ZSET) member of a delivery ID of priority 0.
func mem(id string) string { return memp(id, 0) }

// memp is the ready member of a delivery ID of priority p (in range).
func memp(id string, p int) string {
	return fmt.Sprintf("%07d:%016s", PriorityMax-p, id)
}

func mems(ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = mem(id)
	}
	return out
}

// members returns the members of a ZRANGE WITHSCORES reply.
func members(zs []redis.Z) []string {
	out := make([]string, len(zs))
	for i, z := range zs {
		out[i], _ = z.Member.(string)
	}
	return out
}
