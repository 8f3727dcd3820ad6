package adaptertest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// Env is one test's backend on the shared server, under a key prefix of its own. An adapter's
// tests embed it in their env, next to the backend's concrete type.
type Env struct {
	T      *testing.T
	Ctx    context.Context
	C      *redis.Client
	Prefix string
	B      backend.Backend
	// Tag returns the hash tag that starts topic's keys, for Keys: keys.Tag(Prefix, topic)
	// unless set.
	Tag func(topic string) string
	// RequireDecoded makes Claim and ClaimLease fail the test on a delivery that did not decode.
	RequireDecoded bool
}

// Server returns a client of the shared test server and a key prefix unique to t.
func Server(t *testing.T) (*redis.Client, string) {
	t.Helper()
	return redistest.Shared(t).Client(t), redistest.Prefix(t)
}

// NewEnv returns the Env of b, a backend on c with its keys under prefix.
func NewEnv(t *testing.T, c *redis.Client, prefix string, b backend.Backend) *Env {
	e := &Env{T: t, Ctx: context.Background(), C: c, Prefix: prefix, B: b}
	e.Tag = func(topic string) string { return keys.Tag(e.Prefix, topic) }
	return e
}

// Keys lists the keys of topic, without the tag, sorted: "seq", "g:default:ready", ...
func (e *Env) Keys(topic string) []string {
	e.T.Helper()
	tag := e.Tag(topic) + ":"
	var out []string
	iter := e.C.Scan(e.Ctx, 0, tag+"*", 1000).Iterator()
	for iter.Next(e.Ctx) {
		out = append(out, strings.TrimPrefix(iter.Val(), tag))
	}
	require.NoError(e.T, iter.Err())
	slices.Sort(out)
	return out
}

// LRange returns a LIST.
func (e *Env) LRange(key string) []string {
	e.T.Helper()
	v, err := e.C.LRange(e.Ctx, key, 0, -1).Result()
	require.NoError(e.T, err)
	return v
}

// ZMembers returns a ZSET's members in order.
func (e *Env) ZMembers(key string) []string {
	e.T.Helper()
	v, err := e.C.ZRange(e.Ctx, key, 0, -1).Result()
	require.NoError(e.T, err)
	return v
}

// ZScore returns the score of member in a ZSET.
func (e *Env) ZScore(key, member string) float64 {
	e.T.Helper()
	v, err := e.C.ZScore(e.Ctx, key, member).Result()
	require.NoError(e.T, err)
	return v
}

// Hash returns a HASH.
func (e *Env) Hash(key string) map[string]string {
	e.T.Helper()
	v, err := e.C.HGetAll(e.Ctx, key).Result()
	require.NoError(e.T, err)
	return v
}

// Exists reports whether key exists.
func (e *Env) Exists(key string) bool {
	e.T.Helper()
	n, err := e.C.Exists(e.Ctx, key).Result()
	require.NoError(e.T, err)
	return n == 1
}

// ExpireLease moves the lease deadline of id in leases (a ZSET id -> deadline) into the past,
// as if the lease had run out.
func (e *Env) ExpireLease(leases, id string) {
	e.T.Helper()
	require.NoError(e.T, e.C.ZAddXX(e.Ctx, leases, redis.Z{Score: 1, Member: id}).Err())
	require.Equal(e.T, 1.0, e.ZScore(leases, id), "no lease to expire")
}

// NamedClient returns a client of the shared server named name, so that CLIENT LIST (Blocked,
// Env.WaitBlocked) tells its connections apart, with edit (if not nil) applied to its
// options; it is closed when t ends.
func NamedClient(t testing.TB, name string, edit func(*redis.Options)) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(redistest.Shared(t).URL())
	require.NoError(t, err)
	opt.ClientName = name
	if edit != nil {
		edit(opt)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// WaitBlocked waits until n connections named name are blocked in command cmd ("blpop",
// "xread").
func (e *Env) WaitBlocked(name, cmd string, n int) {
	e.T.Helper()
	require.Eventually(e.T, func() bool {
		return Blocked(e.Ctx, e.C, name, cmd) == n
	}, 5*time.Second, time.Millisecond, "%d claims should block in %s", n, cmd)
}

// Blocked counts the connections named name that are blocked in command cmd ("": any) now.
// CLIENT LIST's cmd is a connection's last command, so an idle connection that last ran cmd
// shows it too; only the flag b tells that it is blocked now.
func Blocked(ctx context.Context, c redis.UniversalClient, name, cmd string) int {
	got := 0
	for line := range strings.Lines(c.ClientList(ctx).Val()) {
		fields := map[string]string{}
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if fields["name"] == name && (cmd == "" || fields["cmd"] == cmd) && strings.Contains(fields["flags"], "b") {
			got++
		}
	}
	return got
}
