package redistest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// A 3-primary cluster with replicas serves keys on every primary and survives the loss of
// one primary: its replica takes over and the data is still there.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	cc := c.Client(t)
	ctx := context.Background()
	for i := range 100 {
		require.NoError(t, cc.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err())
	}
	primaries, err := c.Primaries()
	require.NoError(t, err)
	require.Len(t, primaries, 3)

	// Give the replicas time to copy the writes, then lose a primary.
	for _, p := range primaries {
		require.NoError(t, p.Client(t).Do(ctx, "WAIT", 1, 2000).Err())
	}
	require.NoError(t, primaries[0].Kill())
	require.NoError(t, c.WaitHealthy(30*time.Second))
	after, err := c.Primaries()
	require.NoError(t, err)
	require.Len(t, after, 3, "a replica should have been promoted")
	require.Eventually(t, func() bool {
		for i := range 100 {
			v, err := cc.Get(ctx, fmt.Sprintf("k%d", i)).Int()
			if err != nil || v != i {
				return false
			}
		}
		return true
	}, 20*time.Second, 100*time.Millisecond)
}
