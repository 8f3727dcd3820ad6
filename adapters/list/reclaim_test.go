package list

import (
	"fmt"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/seal"
	"github.com/stretchr/testify/require"
)

func TestOrphanInProcessingGetsALeaseAndIsReclaimedWhenItExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	x := e.Publish("t", "x")
	f := seal.Open(e.b)

	id, err := f.InjectOrphan(e.Ctx, "t", "g")
	require.NoError(t, err)
	require.Equal(t, x[0], id)
	require.Len(t, e.LRange(k.processing), 1)
	require.Regexp(t, `^`+id+`@\d+$`, e.LRange(k.processing)[0], "BLMOVE leaves the ready entry as it was")
	require.False(t, e.Exists(k.pending))
	require.Equal(t, int64(1), e.Stats("t", "g").Pending, "an entry in processing counts as pending")

	res := e.Reclaim("t", "g", 0)
	require.Equal(t, backend.ReclaimResult{Orphans: 1}, counts(res))
	require.True(t, res.NextExpiry > 0 && res.NextExpiry <= time.Minute, "the orphan lease (a minute) expires next: %v", res.NextExpiry)
	require.False(t, e.Exists(k.processing), "the orphan leaves processing for pending")
	require.Equal(t, []string{id}, e.ZMembers(k.pending))
	require.Equal(t, map[string]string{id: ""}, e.holders(k), "an orphan lease is held by nobody")
	require.Equal(t, int64(1), e.Stats("t", "g").Pending)
	require.Equal(t, backend.ReclaimResult{}, counts(e.Reclaim("t", "g", 0)), "found once")

	// Nobody holds an orphan: a nack of it is stale, whatever the attempt.
	require.Equal(t, backend.NackResult{Stale: 1}, e.Nack("t", "g", "c", 0, backend.NackItem{ID: id, Attempt: 0}))
	require.Equal(t, backend.NackResult{Stale: 1}, e.Nack("t", "g", "c", 0, backend.NackItem{ID: id, Attempt: 1}))
	require.Equal(t, map[string]string{id: ""}, e.holders(k))

	// Attempts after an expired orphan lease: TestExpiredOrphanLeaseIsNotAnAttempt.
	e.expire("t", "g", id)
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1}, e.Reclaim("t", "g", 0))
	require.Equal(t, []string{id}, e.readyIDs(k.ready))
	require.False(t, e.Exists(k.processing))
	require.False(t, e.Exists(k.pending))

	d := e.Claim("t", "g", "c", 1)
	require.Equal(t, []string{id}, adaptertest.IDs(d))
	require.Equal(t, backend.AckResult{Acked: 1}, e.Ack("t", "g", "c", d...))
	require.Equal(t, []string{"g:g:counters", "meta", "registry"}, e.Keys("t"))

	none, err := f.InjectOrphan(e.Ctx, "t", "g")
	require.NoError(t, err)
	require.Empty(t, none)
}

// The BLMOVE window is not an attempt: no handler saw the message. So an orphan lease that
// expires is below any MaxDeliveries, and the next claim is attempt 1.
func TestExpiredOrphanLeaseIsNotAnAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	id, err := seal.Open(e.b).InjectOrphan(e.Ctx, "t", "g")
	require.NoError(t, err)
	require.Equal(t, 1, e.Reclaim("t", "g", 0).Orphans)

	e.expire("t", "g", id)
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1}, e.Reclaim("t", "g", 1), "attempt 0 is below any limit")
	require.Equal(t, []string{id}, e.readyIDs(k.ready))
	require.False(t, e.Exists(k.dead))

	d := e.Claim("t", "g", "c", 1)
	require.Equal(t, []string{id}, adaptertest.IDs(d))
	require.Equal(t, 1, d[0].Attempt, "the BLMOVE window was not an attempt")
}

func TestRegisterTakesOverAnOrphanLeaseButNotAHeldOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "x", "y", "z")
	p := &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c1", Lease: time.Minute}

	// BLMOVE moved the entry of the first; Reclaim made it the bare id with an orphan lease
	// before register ran, which gets the entry BLMOVE returned and takes the orphan over.
	entry := e.C.LMove(e.Ctx, k.ready, k.processing, "RIGHT", "LEFT").Val()
	id := ids[0]
	require.Regexp(t, `^`+id+`@\d+$`, entry)
	require.Equal(t, 1, e.Reclaim("t", "g", 0).Orphans)
	require.False(t, e.Exists(k.processing), "the orphan left processing for pending")
	require.Equal(t, []string{id}, e.ZMembers(k.pending))
	require.Equal(t, map[string]string{id: ""}, e.holders(k), "an orphan lease is held by nobody")
	orphanSince := e.pendingSince(k, id)
	c, err := e.b.register(e.Ctx, p, 1, entry)
	require.NoError(t, err)
	ds := c.Deliveries
	require.Equal(t, []string{id}, adaptertest.IDs(ds))
	require.Equal(t, 1, ds[0].Attempt)
	require.Equal(t, map[string]string{id: "c1"}, e.holders(k))
	require.Equal(t, orphanSince, e.pendingSince(k, id), "pending since first sight")

	// Registering a held id returns nothing for it; the script claims from ready instead.
	p.Consumer = "c2"
	c, err = e.b.register(e.Ctx, p, 1, entry)
	require.NoError(t, err)
	ds = c.Deliveries
	require.Equal(t, ids[1:2], adaptertest.IDs(ds))
	require.Equal(t, map[string]string{id: "c1", ids[1]: "c2"}, e.holders(k))

	// The usual case: the entry BLMOVE moved is still in processing, and register.lua takes it
	// out into pending.
	entry = e.C.LMove(e.Ctx, k.ready, k.processing, "RIGHT", "LEFT").Val()
	require.Regexp(t, `^`+ids[2]+`@\d+$`, entry)
	c, err = e.b.register(e.Ctx, p, 1, entry)
	require.NoError(t, err)
	ds = c.Deliveries
	require.Equal(t, ids[2:], adaptertest.IDs(ds))
	require.Equal(t, map[string]int{ids[0]: 1, ids[1]: 1, ids[2]: 1}, e.attempts(k))
	require.Equal(t, map[string]string{ids[0]: "c1", ids[1]: "c2", ids[2]: "c2"}, e.holders(k))
	require.False(t, e.Exists(k.processing))
	require.Equal(t, ids, e.ZMembers(k.pending))

	// An entry no longer in processing (say its orphan lease expired and it went back to
	// ready, then was claimed) is not registered, and ready is empty: nothing comes back.
	c, err = e.b.register(e.Ctx, p, 1, "99@1")
	require.NoError(t, err)
	require.Empty(t, c.Deliveries)
	require.False(t, e.Exists(k.processing))
	require.Equal(t, ids, e.ZMembers(k.pending))
	require.Equal(t, int64(3), e.Stats("t", "g").Counters.Claimed)
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
	require.False(t, e.Exists(k.processing))
	require.False(t, e.Exists(k.pending))
	require.False(t, e.Exists(k.holders))
	require.False(t, e.Exists(k.ready))
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
	res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g", OrphanLease: time.Minute, Count: 2})
	require.NoError(t, err)
	require.Equal(t, 2, res.Reclaimed)
	require.Equal(t, []string{ids[1], ids[0]}, e.readyIDs(e.gk("t", "g").ready), "earliest deadline at the consume end")
	require.Equal(t, 1, e.Reclaim("t", "g", 0).Reclaimed)
}

// Leases that expire together come back in id order, so one consumer still sees FIFO after a
// reclaim: a claim gives its whole batch one deadline, and the pending ZSET orders equal
// deadlines by member bytes ("10" before "9"). A topic created by an earlier build counts its
// IDs from 1, so they cross lengths.
func TestLeasesThatExpireTogetherComeBackInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	require.NoError(t, e.C.HSet(e.Ctx, e.gk("t", "g").topic.meta, "seq", 0).Err())
	var payloads []string
	for i := 1; i <= 12; i++ {
		payloads = append(payloads, fmt.Sprint(i))
	}
	require.Equal(t, payloads, e.Publish("t", payloads...), "IDs 1 to 12")
	ds := e.ClaimLease("t", "g", "dead", 12, 50*time.Millisecond)
	require.Len(t, ds, 12)
	require.Eventually(t, func() bool { return e.Reclaim("t", "g", 0).Reclaimed == 12 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, payloads, adaptertest.Payloads(e.Claim("t", "g", "live", 12)))
}
