package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestKillLosesNothingFsyncedWithAOFAlways(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{AOF: true, AppendFsync: "always"})
	c := s.Client(t)
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.NoError(t, s.Kill())
	require.Error(t, c.Ping(ctx).Err(), "server should be down")
	require.NoError(t, s.Start())
	require.Equal(t, "v", c.Get(ctx, "k").Val())
}

func TestRestartCommandRestartsWithData(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{AOF: true})
	c := s.Client(t)
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	before := c.Info(ctx, "server").Val()
	cmd := s.RestartCommand(t)
	out, err := execCommand(cmd)
	require.NoError(t, err, out)
	require.Eventually(t, func() bool { return c.Get(ctx, "k").Val() == "v" }, 5*time.Second, 10*time.Millisecond)
	require.NotEqual(t, runID(before), runID(c.Info(ctx, "server").Val()), "server was not restarted")
}

func TestSharedServerAndPrefixes(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	require.NoError(t, s.Client(t).Ping(context.Background()).Err())
	require.NotEqual(t, redistest.Prefix(t), redistest.Prefix(t))
}
