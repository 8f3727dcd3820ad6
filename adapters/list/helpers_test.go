package list

import (
	"strconv"
	"strings"
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

// readyIDs returns the ids of the ready entries ("id@ms"), left to right.
func (e *env) readyIDs(ready string) []string {
	var ids []string
	for _, entry := range e.LRange(ready) {
		id, _, _ := strings.Cut(entry, "@")
		ids = append(ids, id)
	}
	return ids
}

// readySince returns id -> ready-since (ms) of the ready entries.
func (e *env) readySince(ready string) map[string]int64 {
	out := map[string]int64{}
	for _, entry := range e.LRange(ready) {
		id, ms, ok := strings.Cut(entry, "@")
		require.True(e.T, ok, "ready entry %q carries its ready-since time", entry)
		n, err := strconv.ParseInt(ms, 10, 64)
		require.NoError(e.T, err)
		out[id] = n
	}
	return out
}

// holders returns id -> consumer of the group's holders ("consumer:since"; "" for an orphan
// lease, held by nobody).
func (e *env) holders(k groupKeys) map[string]string {
	out := map[string]string{}
	for id, v := range e.Hash(k.holders) {
		consumer, _, ok := strings.Cut(v, ":")
		require.True(e.T, ok, "holder %q carries its pending-since time", v)
		out[id] = consumer
	}
	return out
}

// pendingSince returns the pending-since time (ms) stored with id's holder.
func (e *env) pendingSince(k groupKeys, id string) int64 {
	_, since, ok := strings.Cut(e.Hash(k.holders)[id], ":")
	require.True(e.T, ok, "%s has a holder", id)
	n, err := strconv.ParseInt(since, 10, 64)
	require.NoError(e.T, err)
	return n
}
