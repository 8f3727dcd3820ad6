package backendkit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// waitsEnv is a client named after a fresh prefix (its wait connections carry the name) and a
// client of its own to watch CLIENT LIST with.
type waitsEnv struct {
	user, watch *redis.Client
	name        string
}

func newWaitsEnv(t *testing.T) waitsEnv {
	t.Helper()
	watch, name := adaptertest.Server(t)
	opt, err := redis.ParseURL(redistest.Shared(t).URL())
	require.NoError(t, err)
	opt.ClientName = name
	user := redis.NewClient(opt)
	t.Cleanup(func() { _ = user.Close() })
	return waitsEnv{user: user, watch: watch, name: name}
}

// blpop runs BLPOP key for d through w and sends its error on the returned channel.
func blpop(ctx context.Context, w *backendkit.Waits, key string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, key, func(ctx context.Context, c redis.UniversalClient) error {
			return c.BLPop(ctx, d, key).Err()
		})
	}()
	return done
}

func (e waitsEnv) waitBlocked(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return adaptertest.Blocked(context.Background(), e.watch, e.name, "blpop") == n
	}, 10*time.Second, time.Millisecond, "%d waits should be blocked", n)
}

// Waits block on connections of their own, many more than the client's pool holds, and a
// finished wait keeps its connection for the next.
func TestWaitsTakeNoConnectionOfTheClient(t *testing.T) {
	t.Parallel()
	e := newWaitsEnv(t)
	w := backendkit.NewWaits(e.user)
	t.Cleanup(func() { _ = w.Close() })
	n := e.user.Options().PoolSize + 5
	var done []<-chan error
	for range n {
		done = append(done, blpop(context.Background(), w, e.name+":k", time.Minute))
	}
	e.waitBlocked(t, n)
	require.Zero(t, e.user.PoolStats().TotalConns, "the client's own pool is untouched")

	require.NoError(t, e.watch.RPush(context.Background(), e.name+":k", make([]any, n)...).Err())
	for _, d := range done {
		require.NoError(t, <-d)
	}
	require.ErrorIs(t, <-blpop(context.Background(), w, e.name+":k2", time.Second), redis.Nil)
	require.Equal(t, n, connections(t, e), "the next wait took an idle connection")
}

// A wait whose context ends is ended in Redis at once, however long its block.
func TestWaitsContextEndsTheBlockedCommand(t *testing.T) {
	t.Parallel()
	e := newWaitsEnv(t)
	w := backendkit.NewWaits(e.user)
	t.Cleanup(func() { _ = w.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := blpop(ctx, w, e.name+":k", time.Hour)
	e.waitBlocked(t, 1)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	e.waitBlocked(t, 0)

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, <-blpop(ctx, w, e.name+":k", time.Hour), context.DeadlineExceeded)
	e.waitBlocked(t, 0)
}

// Close ends the waits in progress and refuses later ones with backend.ErrClosed.
func TestWaitsClose(t *testing.T) {
	t.Parallel()
	e := newWaitsEnv(t)
	w := backendkit.NewWaits(e.user)
	done := blpop(context.Background(), w, e.name+":k", time.Hour)
	e.waitBlocked(t, 1)
	require.NoError(t, w.Close())
	require.ErrorIs(t, <-done, backend.ErrClosed)
	e.waitBlocked(t, 0)
	require.ErrorIs(t, <-blpop(context.Background(), w, e.name+":k", time.Second), backend.ErrClosed)
	require.Eventually(t, func() bool { return connections(t, e) == 0 }, 10*time.Second, time.Millisecond,
		"no connection stays open")
}

// A client whose options Waits cannot copy runs the waits itself.
func TestWaitsOnAnotherClientTypeUseIt(t *testing.T) {
	t.Parallel()
	e := newWaitsEnv(t)
	w := backendkit.NewWaits(wrapped{e.user})
	require.ErrorIs(t, <-blpop(context.Background(), w, e.name+":k", time.Second), redis.Nil)
	require.Equal(t, uint32(1), e.user.PoolStats().TotalConns, "the wait ran on the client's pool")
}

type wrapped struct{ redis.UniversalClient }

// connections counts the open connections named e.name, less the user client's own.
func connections(t *testing.T, e waitsEnv) int {
	t.Helper()
	list, err := e.watch.ClientList(context.Background()).Result()
	require.NoError(t, err)
	n := 0
	for line := range strings.Lines(list) {
		if strings.Contains(line, " name="+e.name+" ") {
			n++
		}
	}
	return n - int(e.user.PoolStats().TotalConns)
}

// On Redis Cluster each wait goes to the primary that owns its key's slot: a wait sent
// elsewhere would fail with MOVED at once instead of timing out.
func TestWaitsOnClusterReachTheKeysPrimary(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: -1})
	c := cluster.Client(t)
	w := backendkit.NewWaits(c)
	t.Cleanup(func() { _ = w.Close() })
	var done []<-chan error
	for i := range 12 { // keys of several slots, over the three primaries
		done = append(done, blpop(context.Background(), w, "{k"+strings.Repeat("x", i)+"}", time.Second))
	}
	for _, d := range done {
		require.ErrorIs(t, <-d, redis.Nil)
	}
}
