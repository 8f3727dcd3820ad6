package faults

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

// For every backend, one partition's slot is moved to another primary, as a Cluster
// resharding does, while publishers send single messages to each of the topic's 6
// partitions and two subscribers of one group consume them: the target imports the slot, the
// source migrates it, its keys move one MIGRATE at a time (so that clients meet the slot half
// moved, with ASK redirects and TRYAGAIN replies), then every primary learns the new owner.
//
// What is asserted: the moved partition's keys live on the target afterwards; messages of
// every partition, the moved one included, are handled after the move (publish and claims
// resume); every message whose Publish returned nil is handled, and none is dead-lettered.
func TestPartitionSlotMigration(t *testing.T) {
	t.Parallel()
	after := time.Duration(scale(1, 10)) * time.Second // load once the move is done
	ctx := context.Background()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{ReplicasPerMaster: -1})
	cc := cluster.Client(t)
	primaries, err := cluster.Primaries()
	require.NoError(t, err)
	require.Len(t, primaries, 3)

	runs := make([]*partitionRun, len(faultBackends))
	tags := make([]func(string) string, len(faultBackends))
	for i, bc := range faultBackends {
		b, layout, tag := partitionedBackend(t, bc, cc)
		runs[i], tags[i] = startPartitionRun(t, bc.name, b, layout, map[int]bool{}), tag
	}
	for _, r := range runs {
		require.True(t, pollUntil(failoverTimeout, func() bool { return r.everyPartitionSince(time.Time{}) }), "%s: messages do not flow before the move", r.name)
	}

	moves := make([]time.Duration, len(runs))
	for i, r := range runs {
		key := tags[i](r.layout.Name(0))
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		require.NoError(t, err)
		owner, err := ownerOf(ctx, cc, key)
		require.NoError(t, err)
		from, to := primaries[0], primaries[1]
		if owner == to.Addr() {
			from, to = to, primaries[2]
		} else if owner != from.Addr() {
			from = primaries[2]
		}
		require.Equal(t, owner, from.Addr())
		start := time.Now()
		n, err := cluster.MoveSlot(ctx, int(slot), from, to)
		require.NoError(t, err, "%s: moving slot %d", r.name, slot)
		moves[i] = time.Since(start)
		movedAt := time.Now()
		t.Logf("%s: partition 0 (slot %d, %d keys) moved from %s to %s in %v", r.name, slot, n, from.Addr(), to.Addr(), moves[i])
		require.Positive(t, n, "%s: the partition had keys to move", r.name)
		require.True(t, pollUntil(failoverTimeout, func() bool {
			owner, err := ownerOf(ctx, cc, key)
			return err == nil && owner == to.Addr()
		}), "%s: the client does not see the partition on its new primary", r.name)
		require.True(t, pollUntil(failoverTimeout, func() bool { return r.everyPartitionSince(movedAt) }),
			"%s: a partition was not delivered again after the move", r.name)
	}
	time.Sleep(after) // a phase of load on the resharded cluster, not a wait for a condition
	for _, r := range runs {
		r.stopPublishing()
	}
	for i, r := range runs {
		r.finish(t, time.Time{}, "partition's slot moved to another primary under load",
			"6 partitions, partition 0 moved key by key in "+moves[i].Round(time.Millisecond).String()+"; %d publishes failed and were retried")
	}
}
