package zset

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/adaptertest"
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

func (e *env) gk(topic, group string) groupKeys { return e.b.groupKeys(topic, group) }

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
func (e *env) expire(topic, group, id string) { e.ExpireLease(e.gk(topic, group).leases, id) }

func zmember(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// mem is the ready member of a delivery ID of priority 0.
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
