package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// An expired lease comes back due now: behind the messages that were already due, which go
// first, and with the next attempt.
func TestExpiredLeaseIsReclaimedDueNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.publish("t", "a", "b", "c")
	due := e.zscore(k.ready, mem("1"))
	crashed := e.claim("t", "g", "c1", 1)[0]
	require.Eventually(t, func() bool { return e.redisNow() > due+2 }, 5*time.Second, time.Millisecond)

	e.expire("t", "g", crashed.ID)
	before := e.redisNow()
	require.Equal(t, pubsub.ReclaimResult{Reclaimed: 1}, e.reclaim("t", "g", 0))
	require.GreaterOrEqual(t, e.zscore(k.ready, mem(crashed.ID)), before, "due at the reclaim, Redis now")
	require.Equal(t, mems("2", "3", "1"), e.zmembers(k.ready))
	require.False(t, e.exists(k.leases))
	require.False(t, e.exists(k.holders))
	require.False(t, e.exists(k.pendingAt))
	require.False(t, e.exists(k.dueAt))
	require.Equal(t, []string{"1"}, e.lrange(k.wake), "a blocked consumer is woken")

	ds := e.claim("t", "g", "c2", 3)
	require.Equal(t, []string{"b", "c", "a"}, payloads(ds))
	require.Equal(t, 2, ds[2].Attempt)
	require.Equal(t, int64(1), e.stats("t", "g").Counters.Reclaimed)
}

func TestExpiredLeaseAtMaxDeliveriesIsDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.publish("t", "x")
	d := e.claim("t", "g", "c", 1)[0]
	e.expire("t", "g", d.ID)

	require.Equal(t, pubsub.ReclaimResult{DeadLettered: 1}, e.reclaim("t", "g", 1))
	require.False(t, e.exists(k.leases))
	require.False(t, e.exists(k.ready))
	dls, err := e.b.DeadLetters(e.ctx, &pubsub.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, "lease expired after 1 attempts", dls[0].Reason)
	require.Equal(t, 1, dls[0].Attempts)
	require.Equal(t, envelope("x"), dls[0].Envelope)
	require.Equal(t, int64(1), e.stats("t", "g").Counters.DeadLettered)
}

func TestReclaimIsBoundedByCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ensureGroup("t", "g")
	e.publish("t", "a", "b", "c")
	for _, d := range e.claim("t", "g", "c", 3) {
		e.expire("t", "g", d.ID)
	}
	res, err := e.b.Reclaim(e.ctx, &pubsub.ReclaimParams{Topic: "t", Group: "g", Count: 2})
	require.NoError(t, err)
	require.Equal(t, 2, res.Reclaimed)
	require.Equal(t, mems("1", "2"), e.zmembers(e.gk("t", "g").ready))
	require.Equal(t, 1, e.reclaim("t", "g", 0).Reclaimed)
}

// A claim takes and leases in one script: nothing is ever pending without a lease, so there is
// no orphan to inject or recover.
func TestThereAreNoOrphans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish("t", "x")
	id, err := e.b.Faults().InjectOrphan(e.ctx, "t", pubsub.DefaultGroup)
	require.ErrorIs(t, err, pubsub.ErrNotImplemented)
	require.Empty(t, id)
	require.False(t, e.b.Capabilities().PendingOrphans)
	require.Equal(t, int64(1), e.stats("t", pubsub.DefaultGroup).Ready, "nothing was moved")
}
