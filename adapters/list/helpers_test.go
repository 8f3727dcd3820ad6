package list

import (
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

// expire moves the lease deadline of id into the past, as if the lease had run out.
func (e *env) expire(topic, group, id string) { e.ExpireLease(e.gk(topic, group).leases, id) }

func zmember(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
