package list

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func TestStaleNackAndExtendAreIgnoredAfterAnotherConsumerReclaimed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	old := e.Claim("t", "g", "c1", 1)[0]

	e.expire("t", "g", old.ID)
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1}, e.Reclaim("t", "g", 0))
	require.Equal(t, []string{old.ID}, e.readyIDs(k.ready))
	require.Empty(t, e.holders(k))
	require.Equal(t, backend.ReclaimResult{}, e.Reclaim("t", "g", 0), "reclaim is idempotent")

	cur := e.Claim("t", "g", "c2", 1)[0]
	require.Equal(t, 2, cur.Attempt)
	deadline := e.ZScore(k.pending, cur.ID)

	res := e.Nack("t", "g", "c1", 0, backend.NackItem{ID: old.ID, Attempt: old.Attempt})
	require.Equal(t, backend.NackResult{Stale: 1}, res)
	lost, err := e.b.Extend(e.Ctx, &backend.ExtendParams{Topic: "t", Group: "g", Consumer: "c1", Items: adaptertest.Held(old), Lease: time.Hour})
	require.NoError(t, err)
	require.Equal(t, []string{old.ID}, lost)
	// The same consumer name with the old attempt is fenced off too.
	res = e.Nack("t", "g", "c2", 0, backend.NackItem{ID: old.ID, Attempt: old.Attempt})
	require.Equal(t, backend.NackResult{Stale: 1}, res)

	require.Equal(t, []string{cur.ID}, e.ZMembers(k.pending), "stale calls changed nothing")
	require.False(t, e.Exists(k.processing))
	require.Equal(t, map[string]string{cur.ID: "c2"}, e.holders(k))
	require.Equal(t, map[string]int{cur.ID: 2}, e.attempts(k))
	require.False(t, e.Exists(k.retries))
	require.Equal(t, deadline, e.ZScore(k.pending, cur.ID))
	require.Empty(t, e.readyIDs(k.ready))
	require.False(t, e.Exists(k.delayed))

	lost, err = e.b.Extend(e.Ctx, &backend.ExtendParams{Topic: "t", Group: "g", Consumer: "c2", Items: adaptertest.Held(cur), Lease: time.Hour})
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Greater(t, e.ZScore(k.pending, cur.ID), deadline)

	// An ack is accepted from any holder (the work is done), and counted stale.
	require.Equal(t, backend.AckResult{Acked: 1, Stale: 1}, e.Ack("t", "g", "c1", old))
	require.Equal(t, []string{"g:g:counters", "meta", "registry"}, e.Keys("t"))
	c := e.Stats("t", "g").Counters
	require.Equal(t, backend.Counters{Published: 1, Claimed: 2, Acked: 1, Reclaimed: 1, StaleAcks: 1, StaleNacks: 2}, c)
}

func TestNackRetriesAtTheConsumeEndAndReleaseKeepsTheAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "1st", "2nd")

	d := e.Claim("t", "g", "c", 1)[0]
	require.Equal(t, backend.NackResult{Requeued: 1}, e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt}))
	require.Equal(t, []string{ids[1], ids[0]}, e.readyIDs(k.ready), "retried message is next")
	require.Empty(t, e.LRange(k.processing))
	require.Empty(t, e.ZMembers(k.pending))
	require.Empty(t, e.holders(k))
	require.Equal(t, map[string]string{d.ID: "1"}, e.Hash(k.retries), "the attempt is kept while it waits")

	d = e.Claim("t", "g", "c", 1)[0]
	require.Equal(t, "1st", string(d.Envelope.Payload))
	require.Equal(t, 2, d.Attempt)
	rel := e.Nack("t", "g", "c", 2, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Release: true})
	require.Equal(t, backend.NackResult{Requeued: 1}, rel, "release is not an attempt, even at MaxDeliveries")
	require.Equal(t, map[string]string{d.ID: "1"}, e.Hash(k.retries), "the released attempt is given back")
	require.Empty(t, e.holders(k))

	d = e.Claim("t", "g", "c", 1)[0]
	require.Equal(t, 2, d.Attempt)
	res := e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour})
	require.Equal(t, backend.NackResult{Requeued: 1}, res)
	require.Equal(t, []string{d.ID}, e.ZMembers(k.delayed))
	require.Equal(t, ids[1:], adaptertest.IDs(e.Claim("t", "g", "c", 5)), "the delayed retry waits")

	s := e.Stats("t", "g")
	require.Equal(t, int64(1), s.Delayed)
	require.Equal(t, int64(1), s.Pending)
	require.Equal(t, int64(2), s.Counters.Nacked, "the release is not counted")
}

func TestDelayedMessagesArePromotedWhenDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	id := e.PublishDelayed("t", time.Hour, "later")[0]
	require.Empty(t, e.readyIDs(k.ready))
	require.Equal(t, []string{id}, e.ZMembers(k.delayed))
	require.Empty(t, e.Claim("t", "g", "c", 1))

	require.NoError(t, e.C.ZAdd(e.Ctx, k.delayed, zmember(1, id)).Err()) // due long ago
	require.Equal(t, backend.ReclaimResult{Promoted: 1}, e.Reclaim("t", "g", 0))
	require.Equal(t, []string{id}, e.readyIDs(k.ready))
	require.False(t, e.Exists(k.delayed))
	require.Equal(t, map[string]int64{id: 1}, e.readySince(k.ready), "ready since its due time")

	// Claim promotes by itself, and a blocking claim wakes up when the next one is due.
	soon := e.PublishDelayed("t", 50*time.Millisecond, "soon")[0]
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 5, Lease: time.Minute, Block: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{id}, adaptertest.IDs(ds))
	start := time.Now()
	ds, err = e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 5, Lease: time.Minute, Block: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{soon}, adaptertest.IDs(ds))
	require.Less(t, time.Since(start), 5*time.Second, "woke up for the due message, not at the end of Block")
}
