package list

import (
	"testing"
	"time"

	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestOrphanInProcessingGetsALeaseAndIsReclaimedWhenItExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.publish("t", "x")
	f := e.b.Faults()

	id, err := f.InjectOrphan(e.ctx, "t", "g")
	require.NoError(t, err)
	require.Equal(t, "1", id)
	require.Equal(t, []string{id}, e.lrange(k.processing))
	require.False(t, e.exists(k.leases))

	require.Equal(t, pubsub.ReclaimResult{Orphans: 1}, e.reclaim("t", "g", 0))
	require.Equal(t, []string{id}, e.zmembers(k.leases))
	require.Empty(t, e.hash(k.holders), "an orphan lease has no holder")
	require.Empty(t, e.zmembers(k.readyAt))
	require.Equal(t, int64(1), e.stats("t", "g").Pending)
	require.Equal(t, pubsub.ReclaimResult{}, e.reclaim("t", "g", 0), "found once")

	// Nobody holds an orphan: a nack of it is stale.
	require.Equal(t, pubsub.NackResult{Stale: 1}, e.nack("t", "g", "c", 0, pubsub.NackItem{ID: id, Attempt: 0}))

	e.expire("t", "g", id)
	require.Equal(t, pubsub.ReclaimResult{Reclaimed: 1}, e.reclaim("t", "g", 1), "attempt 0 is below any limit")
	require.Equal(t, []string{id}, e.lrange(k.ready))
	require.False(t, e.exists(k.processing))

	d := e.claim("t", "g", "c", 1)
	require.Equal(t, 1, d[0].Attempt, "the BLMOVE window was not an attempt")
	require.Equal(t, pubsub.AckResult{Acked: 1}, e.ack("t", "g", "c", d...))
	require.Equal(t, []string{"g:g:counters", "groups", "seq"}, e.keys("t"))

	none, err := f.InjectOrphan(e.ctx, "t", "g")
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestRegisterTakesOverAnOrphanLeaseButNotAHeldOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.publish("t", "x", "y", "z")
	p := &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c1", Lease: time.Minute}

	// BLMOVE moved "1"; Reclaim leased it as an orphan before register ran.
	id, err := e.b.Faults().InjectOrphan(e.ctx, "t", "g")
	require.NoError(t, err)
	require.Equal(t, 1, e.reclaim("t", "g", 0).Orphans)
	orphanSince := e.zscore(k.pendingAt, id)
	ds, err := e.b.register(e.ctx, k, p, 1, id)
	require.NoError(t, err)
	require.Equal(t, []string{id}, ids(ds))
	require.Equal(t, 1, ds[0].Attempt)
	require.Equal(t, map[string]string{id: "c1"}, e.hash(k.holders))
	require.Equal(t, orphanSince, e.zscore(k.pendingAt, id), "pending since first sight")

	// Registering a held id returns nothing for it; the script claims from ready instead.
	p.Consumer = "c2"
	ds, err = e.b.register(e.ctx, k, p, 1, id)
	require.NoError(t, err)
	require.Equal(t, []string{"2"}, ids(ds))
	require.Equal(t, map[string]string{id: "c1", "2": "c2"}, e.hash(k.holders))

	// An id not in processing (say its orphan lease expired and it went back to ready) is not
	// registered; here it is then claimed from ready, once.
	ds, err = e.b.register(e.ctx, k, p, 1, "3")
	require.NoError(t, err)
	require.Equal(t, []string{"3"}, ids(ds))
	require.Equal(t, map[string]string{"1": "1", "2": "1", "3": "1"}, e.hash(k.attempts))
	require.Equal(t, []string{"3", "2", "1"}, e.lrange(k.processing))
	ds, err = e.b.register(e.ctx, k, p, 1, "99")
	require.NoError(t, err)
	require.Empty(t, ds)
	require.Equal(t, []string{"3", "2", "1"}, e.lrange(k.processing))
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
	require.False(t, e.exists(k.processing))
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
	res, err := e.b.Reclaim(e.ctx, &pubsub.ReclaimParams{Topic: "t", Group: "g", OrphanLease: time.Minute, Count: 2})
	require.NoError(t, err)
	require.Equal(t, 2, res.Reclaimed)
	require.Equal(t, []string{"2", "1"}, e.lrange(e.gk("t", "g").ready), "earliest deadline at the consume end")
	require.Equal(t, 1, e.reclaim("t", "g", 0).Reclaimed)
}
