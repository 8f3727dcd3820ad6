package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/seal"
	"github.com/stretchr/testify/require"
)

// An expired lease comes back in its place, before the messages published after it (as on
// list and streams: the order per key of partitioned topics rests on it), with the next
// attempt.
func TestExpiredLeaseIsReclaimedInItsPlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a", "b", "c")
	due := e.queue(k)[0].due
	crashed := e.Claim("t", "g", "c1", 1)[0]
	require.Eventually(t, func() bool { return e.redisNow() > float64(due+2) }, 5*time.Second, time.Millisecond)

	e.expire("t", "g", crashed.ID)
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1}, e.Reclaim("t", "g", 0))
	q := e.queue(k)
	require.Equal(t, []string{ids[0], ids[1], ids[2]}, qids(q))
	require.Equal(t, due, q[0].due, "due when it was first")
	require.False(t, e.Exists(k.pending))
	require.False(t, e.Exists(k.holders))
	require.False(t, e.Exists(k.pendingAt))
	require.Equal(t, map[string]string{crashed.ID: "1"}, e.Hash(k.retries), "the attempts it has had")
	require.Equal(t, []string{"1"}, e.LRange(k.wake), "a blocked consumer is woken")

	ds := e.Claim("t", "g", "c2", 3)
	require.Equal(t, []string{"a", "b", "c"}, adaptertest.Payloads(ds))
	require.Equal(t, 2, ds[0].Attempt)
	require.False(t, e.Exists(k.retries), "the attempt is in the holders record again")
	require.Equal(t, int64(1), e.Stats("t", "g").Counters.Reclaimed)
}

func TestExpiredLeaseAtMaxDeliveriesIsDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	d := e.Claim("t", "g", "c", 1)[0]
	e.expire("t", "g", d.ID)

	require.Equal(t, backend.ReclaimResult{DeadLettered: 1}, e.Reclaim("t", "g", 1))
	require.False(t, e.Exists(k.pending))
	require.False(t, e.Exists(k.pendingAt))
	require.False(t, e.Exists(k.holders))
	require.False(t, e.Exists(k.queue))
	require.False(t, e.Exists(k.ready))
	require.False(t, e.Exists(k.retries))
	dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, "lease expired after 1 attempts", dls[0].Reason)
	require.Equal(t, 1, dls[0].Attempts)
	require.Equal(t, adaptertest.Envelope("x"), dls[0].Envelope)
	require.Equal(t, int64(1), e.Stats("t", "g").Counters.DeadLettered)
}

func TestReclaimIsBoundedByCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a", "b", "c")
	for _, d := range e.Claim("t", "g", "c", 3) {
		e.expire("t", "g", d.ID)
	}
	res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g", Count: 2})
	require.NoError(t, err)
	require.Equal(t, 2, res.Reclaimed)
	require.Equal(t, ids[:2], qids(e.queue(e.gk("t", "g"))))
	require.Equal(t, 1, e.Reclaim("t", "g", 0).Reclaimed)
}

// A claim takes and leases in one script: nothing is ever pending without a lease, so there is
// no orphan to inject or recover.
func TestThereAreNoOrphans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", backend.DefaultGroup)
	e.Publish("t", "x")
	id, err := seal.Open(e.b).InjectOrphan(e.Ctx, "t", backend.DefaultGroup)
	require.ErrorIs(t, err, backend.ErrNotImplemented)
	require.Empty(t, id)
	require.False(t, e.b.Capabilities().PendingOrphans)
	require.Equal(t, int64(1), e.Stats("t", backend.DefaultGroup).Ready, "nothing was moved")
}
