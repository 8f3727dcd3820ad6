package zset

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
	require.Equal(t, []string{old.ID}, qids(e.queue(k)))
	require.Empty(t, e.Hash(k.holders))
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
	require.Equal(t, map[string]string{cur.ID: "c2:2"}, e.holders(k))
	require.False(t, e.Exists(k.retries))
	require.Equal(t, deadline, e.ZScore(k.pending, cur.ID))
	require.False(t, e.Exists(k.queue))

	lost, err = e.b.Extend(e.Ctx, &backend.ExtendParams{Topic: "t", Group: "g", Consumer: "c2", Items: adaptertest.Held(cur), Lease: time.Hour})
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Greater(t, e.ZScore(k.pending, cur.ID), deadline)

	// An ack is accepted from any holder (the work is done), and counted stale.
	require.Equal(t, backend.AckResult{Acked: 1, Stale: 1}, e.Ack("t", "g", "c1", old))
	require.Equal(t, []string{"g:g:counters", "g:g:wake", "meta", "zregistry"}, e.Keys("t"))
	c := e.Stats("t", "g").Counters
	require.Equal(t, backend.Counters{Published: 1, Claimed: 2, Acked: 1, Reclaimed: 1, StaleAcks: 1, StaleNacks: 2}, c)
}

// An immediate retry and a release come back with the due time they had, ahead of what became
// due after them; a delayed retry is re-scored to now + delay.
func TestRetryAndReleaseKeepTheirPlaceAndDelayedRetryIsRescored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "1st", "2nd")
	due := e.queue(k)[0].due
	require.Eventually(t, func() bool { return e.redisNow() > float64(due+2) }, 5*time.Second, time.Millisecond)
	ids = append(ids, e.Publish("t", "3rd")...) // due later than the first two

	d := e.Claim("t", "g", "c", 1)[0]
	require.Equal(t, backend.NackResult{Requeued: 1}, e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt}))
	q := e.queue(k)
	require.Equal(t, qentry{id: d.ID, due: due}, q[0], "the due time it had, not now")
	require.Equal(t, ids, qids(q), "retried message is next")
	require.Greater(t, q[2].due, due)
	require.False(t, e.Exists(k.ready), "nothing delayed")
	require.False(t, e.Exists(k.pending))
	require.False(t, e.Exists(k.pendingAt))
	require.False(t, e.Exists(k.holders))
	require.Equal(t, map[string]string{d.ID: "1"}, e.Hash(k.retries))

	d = e.Claim("t", "g", "c", 1)[0]
	require.Equal(t, "1st", string(d.Envelope.Payload))
	require.Equal(t, 2, d.Attempt)
	rel := e.Nack("t", "g", "c", 2, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Release: true})
	require.Equal(t, backend.NackResult{Requeued: 1}, rel, "release is not an attempt, even at MaxDeliveries")
	require.Equal(t, map[string]string{d.ID: "1"}, e.Hash(k.retries))
	require.Equal(t, qentry{id: d.ID, due: due}, e.queue(k)[0])

	d = e.Claim("t", "g", "c", 1)[0]
	require.Equal(t, 2, d.Attempt)
	before := e.redisNow()
	res := e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour})
	require.Equal(t, backend.NackResult{Requeued: 1}, res)
	require.InDelta(t, before+3_600_000, e.ZScore(k.ready, mem(d.ID)), 5_000, "due an hour after the nack, Redis clock")
	require.Equal(t, ids[1:], adaptertest.IDs(e.Claim("t", "g", "c", 5)), "the delayed retry waits")

	s := e.Stats("t", "g")
	require.Equal(t, int64(1), s.Delayed)
	require.Equal(t, int64(2), s.Pending)
	require.Equal(t, int64(2), s.Counters.Nacked, "the release is not counted")
}

func TestRetryKeepsItsPriority(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	id := e.PublishWith("t", 0, -7, "low")[0]
	d := e.Claim("t", "g", "c", 1)[0]
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt})
	require.Equal(t, []string{id}, qids(e.queue(k)))
	require.Equal(t, -7, e.queue(k)[0].priority, "an immediate retry is queued with its priority")
	d = e.Claim("t", "g", "c", 1)[0]
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Minute})
	require.Equal(t, []string{memp(id, -7)}, e.ZMembers(k.ready), "a delayed one waits by due time with its priority")
	require.False(t, e.Exists(k.queue))
}

// A nack wakes a blocked consumer, which then sleeps until the retry is due rather than until
// the end of its Block.
func TestDelayedRetryWakesABlockedConsumerOnTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, _ := e.counted(Options{})
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	d := e.Claim("t", "g", "c1", 1)[0]

	const block, delay = 20 * time.Second, 200 * time.Millisecond
	done := claimAsync(e.Ctx, b, backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c2", Count: 1, Lease: time.Minute, Block: block})
	e.blocked(1)
	start := time.Now()
	e.Nack("t", "g", "c1", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: delay})
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{d.ID}, adaptertest.IDs(r.ds))
	require.Equal(t, 2, r.ds[0].Attempt)
	require.GreaterOrEqual(t, r.at.Sub(start), delay-5*time.Millisecond)
	require.Less(t, r.at.Sub(start), block/2)
}
