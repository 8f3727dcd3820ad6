package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/metrics"
)

// The collector exports Redis's eviction policy, flagged when it can evict queue keys, with
// INFO's evicted_keys, and logs such a policy at error level once; a policy it may not read
// (INFO refused) leaves both out and the stats in.
func TestCollectorReportsEviction(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{})
	admin := server.Client(t)
	ctx := context.Background()
	var backends []backend.Backend
	for _, a := range adapters {
		b := newBackendOn(t, server.Client(t), a.name)
		publish(t, b, "orders", 1, 0)
		backends = append(backends, b)
	}
	logger := watermill.NewCaptureLogger()
	c, err := metrics.NewCollector(metrics.CollectorConfig{Backends: backends, Topics: []string{"orders"}, Logger: logger})
	require.NoError(t, err)

	// Other keys fill a Redis that evicts any key: it evicts some.
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "4mb").Err())
	junk := strings.Repeat("x", 10_000)
	for i := range 1000 {
		require.NoError(t, admin.Set(ctx, fmt.Sprintf("junk:%d", i), junk, 0).Err())
	}
	for range 2 {
		got := gather(t, c)
		for _, a := range adapters {
			require.Equal(t, 1.0, got[fmt.Sprintf(`relq_redis_evicts_queue_keys{backend=%q,policy="allkeys-lru"}`, a.name)])
			require.Positive(t, got[fmt.Sprintf(`relq_redis_evicted_keys_total{backend=%q}`, a.name)])
		}
	}
	errs := logger.Captured()[watermill.ErrorLogLevel]
	require.Len(t, errs, 3, "one error per backend, not per scrape")
	require.ErrorContains(t, errs[0].Err, "maxmemory-policy is allkeys-lru")

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
	got := gather(t, c)
	require.Equal(t, 0.0, got[`relq_redis_evicts_queue_keys{backend="list",policy="volatile-lru"}`])

	user := redistest.User{Name: "noinfo", Password: "secret", Rules: []string{"~*", "+@all", "-info"}}
	server.AddUser(t, user)
	b := newBackendOn(t, server.ClientAs(t, user), "zset")
	c, err = metrics.NewCollector(metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"orders"}})
	require.NoError(t, err)
	got = gather(t, c)
	require.Equal(t, 1.0, got[`relq_stats_up{backend="zset"}`])
	for k := range got {
		require.NotContains(t, k, "relq_redis_", "no eviction series when INFO is refused")
	}
}
