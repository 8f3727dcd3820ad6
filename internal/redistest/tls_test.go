package redistest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

// A TLS server answers TLS clients with the test CA's certificate only, and keeps doing so
// across the restarts the failure tests make (RestartCommand drives redis-cli over TLS).
func TestTLSServer(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{AOF: true, TLS: &redistest.TLSOptions{}})
	require.True(t, s.TLS())
	require.True(t, strings.HasPrefix(s.URL(), "rediss://"), s.URL())
	require.FileExists(t, s.CAFile())
	ctx := context.Background()
	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	plain := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer plain.Close()
	require.Error(t, plain.Ping(ctx).Err())

	out, err := execCommand(s.RestartCommand(t))
	require.NoError(t, err, out)
	require.Eventually(t, func() bool { return c.Get(ctx, "k").Val() == "v" }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Outage(10*time.Millisecond))
	require.Equal(t, "v", c.Get(ctx, "k").Val())
}
