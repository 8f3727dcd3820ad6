package list

import (
	"fmt"
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
	now := e.pendingSince(k, d[0].ID)
	e.setPendingSince(k, d[0].ID, now-60_000)
	require.NoError(t, e.C.LSet(e.Ctx, k.ready, 0, fmt.Sprintf("%s@%d", ids[2], now-120_000)).Err())
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: d[1].ID, Attempt: 1, DeadLetter: true})

	s := e.Stats("t", "g")
	require.Equal(t, int64(1), s.Ready)
	require.Equal(t, int64(1), s.Delayed)
	require.Equal(t, int64(1), s.Pending)
	require.Equal(t, int64(1), s.Dead)
	require.InDelta(t, 60*time.Second, s.OldestPendingAge, float64(5*time.Second))
	require.InDelta(t, 120*time.Second, s.OldestReadyAge, float64(5*time.Second))
	require.Equal(t, backend.Counters{Published: 4, Claimed: 2, Nacked: 1, DeadLettered: 1}, s.Counters)
}

// The oldest ready entry need not be the next one in line: an immediate retry goes to the
// consume end, ready since now, and a promoted delayed message joins the back, ready since its
// due time. OldestReadyAge looks at both ends.
func TestOldestReadyAgeLooksPastRetriesAndAtTheBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a", "b")
	since := e.readySince(k.ready)
	// "b" has waited two minutes behind "a".
	require.NoError(t, e.C.LSet(e.Ctx, k.ready, 0, fmt.Sprintf("%s@%d", ids[1], since[ids[1]]-120_000)).Err())
	d := e.Claim("t", "g", "c", 1)
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: d[0].ID, Attempt: 1})
	require.Equal(t, []string{ids[1], ids[0]}, e.readyIDs(k.ready), "the retry is next in line")
	require.InDelta(t, 120*time.Second, e.Stats("t", "g").OldestReadyAge, float64(5*time.Second))

	// A message due an hour ago, promoted behind 150 fresh ones, is the oldest.
	fresh := make([]string, 150)
	for i := range fresh {
		fresh[i] = "f"
	}
	e.Publish("t", fresh...)
	late := e.PublishDelayed("t", time.Hour, "late")[0]
	require.NoError(t, e.C.ZAdd(e.Ctx, k.delayed, zmember(float64(since[ids[1]]-3_600_000), late)).Err())
	require.Equal(t, backend.ReclaimResult{Promoted: 1}, e.Reclaim("t", "g", 0))
	require.Equal(t, late, e.readyIDs(k.ready)[0], "promoted at the back")
	require.InDelta(t, time.Hour, e.Stats("t", "g").OldestReadyAge, float64(5*time.Second))
}

// OldestPendingAge comes from the pending-since time kept for each delivery in pending_at; an
// entry BLMOVE moved and nobody registered yet has none and is counted as pending, not aged.
func TestOldestPendingAgeFromPendingSince(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a", "b", "c")
	d := e.Claim("t", "g", "c", 2)
	since := e.pendingSince(k, d[0].ID)
	e.setPendingSince(k, d[0].ID, since-90_000)
	require.Regexp(t, `^`+ids[2]+`@\d+$`, e.C.LMove(e.Ctx, k.ready, k.processing, "RIGHT", "LEFT").Val())

	s := e.Stats("t", "g")
	require.Equal(t, int64(3), s.Pending)
	require.InDelta(t, 90*time.Second, s.OldestPendingAge, float64(5*time.Second))

	e.Ack("t", "g", "c", d[0])
	require.Less(t, e.Stats("t", "g").OldestPendingAge, 30*time.Second, "the next oldest claim")
}
