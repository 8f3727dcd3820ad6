package backendkit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

const (
	// waitTimeout bounds waits for what must happen; only a failing test waits that long.
	waitTimeout = 15 * time.Second
	tick        = 5 * time.Millisecond
)

func TestRedisVersion(t *testing.T) {
	t.Parallel()
	for info, want := range map[string][3]int{
		"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n": {7, 0, 1},
		"redis_version:6.2.0\n":  {6, 2, 1},
		"redis_version:6.0.16\n": {6, 0, 1},
		"redis_version:x\n":      {0, 0, 0},
		"nothing here\n":         {0, 0, 0},
	} {
		major, minor, ok := ParseVersion(info)
		got := [3]int{major, minor, 0}
		if ok {
			got[2] = 1
		}
		if want[2] == 0 {
			require.False(t, ok, info)
			continue
		}
		require.Equal(t, want, got, info)
	}
	var g VersionGate
	require.False(t, g.Passed())
	require.NoError(t, g.Check(t.Context(), redistest.Shared(t).Client(t)), "the test server is recent enough")
	require.True(t, g.Passed())
}

// A server that refuses INFO passes the gate (scripts fail loudly later if it is too old):
// an ACL user without INFO (NOPERM), and a server where INFO is renamed away, as proxies and
// managed services do (ERR unknown command). Both are real redis-servers.
func TestVersionGatePassesWhenInfoIsRefused(t *testing.T) {
	t.Parallel()
	user := redistest.User{Name: "noinfo", Password: "pw", Rules: []string{"~*", "+@all", "-info"}}
	acl := redistest.Start(t, redistest.Options{Args: user.ServerArgs()})
	renamed := redistest.Start(t, redistest.Options{Args: []string{"--rename-command", "INFO", ""}})
	for name, client := range map[string]redis.UniversalClient{
		"NOPERM":          acl.ClientAs(t, user),
		"unknown command": renamed.Client(t),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Error(t, client.Info(t.Context(), "server").Err(), "INFO must be refused for this test")
			var g VersionGate
			require.NoError(t, g.Check(t.Context(), client))
			require.True(t, g.Passed())
		})
	}
}

// A reply that says the server cannot answer yet (loading its dataset, busy in a script,
// its primary down, ...) is no verdict on the version: Check returns it, and the next call
// asks again.
func TestVersionGateRetriesTransientReplies(t *testing.T) {
	t.Parallel()
	for _, reply := range []string{
		"-LOADING Redis is loading the dataset in memory",
		"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
		"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
		"-TRYAGAIN Multiple keys request during rehashing of slot",
	} {
		t.Run(strings.Fields(reply)[0][1:], func(t *testing.T) {
			t.Parallel()
			stub := startInfoStub(t, func(n int) string {
				if n == 1 {
					return reply + "\r\n"
				}
				return bulk("# Server\r\nredis_version:7.0.15\r\n")
			})
			client := stub.client(t)
			var g VersionGate
			err := g.Check(t.Context(), client)
			require.ErrorContains(t, err, strings.Fields(reply)[0][1:])
			require.False(t, g.Passed(), "a transient reply passed the gate")
			require.NoError(t, g.Check(t.Context(), client), "the second check asks again")
			require.True(t, g.Passed())
			require.NoError(t, g.Check(t.Context(), client))
			require.EqualValues(t, 2, stub.infos.Load(), "INFO once more after the transient reply, then never")
		})
	}
}

// A server too old fails every check without asking again.
func TestVersionGateRejectsAnOldServer(t *testing.T) {
	t.Parallel()
	stub := startInfoStub(t, func(int) string { return bulk("# Server\r\nredis_version:6.0.16\r\n") })
	client := stub.client(t)
	var g VersionGate
	for range 2 {
		err := g.Check(t.Context(), client)
		require.ErrorIs(t, err, backend.ErrRedisVersion)
		require.ErrorContains(t, err, "6.0")
	}
	require.False(t, g.Passed())
	require.EqualValues(t, 1, stub.infos.Load())
}

// While one caller's INFO is stuck on a server that does not answer, another caller is bound
// by its own context, not by the stuck one.
func TestVersionGateHonoursEachCallersContext(t *testing.T) {
	t.Parallel()
	stub := startInfoStub(t, func(int) string { return "" }) // never answers
	client := stub.client(t)
	var g VersionGate

	stuck := make(chan error, 1)
	go func() { stuck <- g.Check(context.Background(), client) }()
	require.Eventually(t, func() bool { return stub.infos.Load() == 1 }, waitTimeout, tick, "the first check's INFO reached the server")

	short := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		short <- g.Check(ctx, client)
	}()
	select {
	case err := <-short:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case err := <-stuck:
		t.Fatalf("the stuck check returned first: %v", err)
	case <-time.After(waitTimeout):
		t.Fatalf("a caller with a 50ms context still waits after %v behind another caller's INFO", waitTimeout)
	}
	require.Empty(t, stuck, "the first check is still waiting for its INFO")
	require.EqualValues(t, 1, stub.infos.Load(), "the second caller waited for the check in flight rather than sending its own INFO")

	stub.close() // the stuck INFO fails: a connection error, returned, and no verdict
	require.Error(t, <-stuck)
	require.False(t, g.Passed())
}

// A check whose own caller gave up says nothing about the server: a caller that was waiting
// for it runs its own rather than returning the other caller's context error.
func TestVersionGateWaiterOutlivesAnAbandonedCheck(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	stub := startInfoStub(t, func(n int) string {
		if n == 1 {
			<-release // the first INFO is answered only after its caller gave up
		}
		return bulk("# Server\r\nredis_version:7.0.15\r\n")
	})
	opt := stub.client(t).Options()
	opt.ContextTimeoutEnabled = true
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	var g VersionGate

	// go-redis ends a read at the context's deadline (ContextTimeoutEnabled), not at once on
	// a cancel. The second caller most likely starts waiting within the 200ms; if it does not,
	// it runs a check of its own, with the same outcome.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- g.Check(ctx, client) }()
	require.Eventually(t, func() bool { return stub.infos.Load() == 1 }, waitTimeout, tick)
	second := make(chan error, 1)
	go func() { second <- g.Check(context.Background(), client) }()
	require.ErrorIs(t, <-first, context.DeadlineExceeded)
	close(release)
	require.NoError(t, <-second)
	require.True(t, g.Passed())
}
