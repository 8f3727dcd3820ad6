package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

func TestStatsCountsAndAges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	require.Equal(t, backend.Stats{Topic: "t", Group: "g"}, e.Stats("t", "g"))

	ids := e.Publish("t", "a", "b", "c")
	e.PublishDelayed("t", time.Hour, "d")
	d := e.Claim("t", "g", "c", 2)
	// Age the oldest pending and ready entries by a known amount, on the Redis clock.
	now := e.ZScore(k.pendingAt, d[0].ID)
	require.NoError(t, e.C.ZAdd(e.Ctx, k.pendingAt, zmember(now-60_000, d[0].ID)).Err())
	e.setQueuedDue(k, ids[2], int64(now)-120_000)
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: d[1].ID, Attempt: 1, DeadLetter: true})

	s := e.Stats("t", "g")
	require.Equal(t, int64(1), s.Ready, "due: score <= Redis now")
	require.Equal(t, int64(1), s.Delayed, "not yet due")
	require.Equal(t, int64(1), s.Pending)
	require.Equal(t, int64(1), s.Dead)
	require.InDelta(t, 60*time.Second, s.OldestPendingAge, float64(5*time.Second))
	require.InDelta(t, 120*time.Second, s.OldestReadyAge, float64(5*time.Second), "ready since its due time")
	require.Equal(t, backend.Counters{Published: 4, Claimed: 2, Nacked: 1, DeadLettered: 1}, s.Counters)

	// A delayed member is not ready, and gives no ready age, until its due time.
	e.Claim("t", "g", "c", 1)
	s = e.Stats("t", "g")
	require.Equal(t, [2]int64{0, 1}, [2]int64{s.Ready, s.Delayed})
	require.Zero(t, s.OldestReadyAge)
}

// Ready counts the queue and the members of the due-time ZSET that are due but not yet moved
// to the queue; the oldest ready age is the oldest due time among all of them, whatever its
// priority.
func TestStatsSeeEveryPriorityAndDueMessagesNotYetQueued(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	var ids []string
	for _, p := range []int{5, 0, -3} {
		ids = append(ids, e.PublishWith("t", 0, p, "x", "y")...)
	}
	later := e.PublishDelayed("t", time.Hour, "later")[0]
	now := int64(e.redisNow())
	e.setQueuedDue(k, ids[5], now-300_000) // the second of priority -3, behind two higher ones
	e.setQueuedDue(k, ids[2], now-200_000)
	s := e.Stats("t", "g")
	require.Equal(t, [2]int64{6, 1}, [2]int64{s.Ready, s.Delayed})
	require.InDelta(t, 300*time.Second, s.OldestReadyAge, float64(5*time.Second), "the lowest priority's oldest")

	// The delayed message became due long ago, and no claim has moved it to the queue yet.
	require.NoError(t, e.C.ZAdd(e.Ctx, k.ready, zmember(float64(now-400_000), mem(later))).Err())
	s = e.Stats("t", "g")
	require.Equal(t, [2]int64{7, 0}, [2]int64{s.Ready, s.Delayed})
	require.InDelta(t, 400*time.Second, s.OldestReadyAge, float64(5*time.Second))
}
