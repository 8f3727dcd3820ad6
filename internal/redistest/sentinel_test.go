package redistest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

// A primary with one replica and three sentinels fails over when the primary is killed: a
// failover client reaches the promoted replica with the data, and the killed node, started
// again, rejoins as the new primary's replica.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	d := redistest.StartSentinel(t, redistest.SentinelOptions{})
	c := d.Client(t)
	ctx := context.Background()
	for i := range 100 {
		require.NoError(t, c.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err())
	}
	require.Equal(t, int64(1), c.Do(ctx, "WAIT", 1, 2000).Val(), "the replica has the writes")

	old := d.Nodes[0]
	require.NoError(t, old.Kill())
	killed := time.Now()
	primary, err := d.WaitFailover(old, time.Minute)
	require.NoError(t, err)
	t.Logf("%s promoted %v after the kill", primary.Addr(), time.Since(killed))
	require.Eventually(t, func() bool {
		for i := range 100 {
			v, err := c.Get(ctx, fmt.Sprintf("k%d", i)).Int()
			if err != nil || v != i {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond)

	require.NoError(t, old.Start())
	restarted := time.Now()
	got, err := d.WaitHealthy(time.Minute)
	require.NoError(t, err)
	require.Equal(t, primary, got)
	t.Logf("%s back as a replica %v after its restart", old.Addr(), time.Since(restarted))
	require.Equal(t, "7", old.Client(t).Get(ctx, "k7").Val())
}
