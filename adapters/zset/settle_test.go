package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestStaleNackAndExtendAreIgnoredAfterAnotherConsumerReclaimed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.publish("t", "x")
	old := e.claim("t", "g", "c1", 1)[0]

	e.expire("t", "g", old.ID)
	require.Equal(t, pubsub.ReclaimResult{Reclaimed: 1}, e.reclaim("t", "g", 0))
	require.Equal(t, mems(old.ID), e.zmembers(k.ready))
	require.Empty(t, e.hash(k.holders))
	require.Equal(t, pubsub.ReclaimResult{}, e.reclaim("t", "g", 0), "reclaim is idempotent")

	cur := e.claim("t", "g", "c2", 1)[0]
	require.Equal(t, 2, cur.Attempt)
	deadline := e.zscore(k.leases, cur.ID)

	res := e.nack("t", "g", "c1", 0, pubsub.NackItem{ID: old.ID, Attempt: old.Attempt})
	require.Equal(t, pubsub.NackResult{Stale: 1}, res)
	lost, err := e.b.Extend(e.ctx, &pubsub.ExtendParams{Topic: "t", Group: "g", Consumer: "c1", Items: held(old), Lease: time.Hour})
	require.NoError(t, err)
	require.Equal(t, []string{old.ID}, lost)
	// The same consumer name with the old attempt is fenced off too.
	res = e.nack("t", "g", "c2", 0, pubsub.NackItem{ID: old.ID, Attempt: old.Attempt})
	require.Equal(t, pubsub.NackResult{Stale: 1}, res)

	require.Equal(t, []string{cur.ID}, e.zmembers(k.leases), "stale calls changed nothing")
	require.Equal(t, map[string]string{cur.ID: "c2"}, e.hash(k.holders))
	require.Equal(t, map[string]string{cur.ID: "2"}, e.hash(k.attempts))
	require.Equal(t, deadline, e.zscore(k.leases, cur.ID))
	require.False(t, e.exists(k.ready))

	lost, err = e.b.Extend(e.ctx, &pubsub.ExtendParams{Topic: "t", Group: "g", Consumer: "c2", Items: held(cur), Lease: time.Hour})
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Greater(t, e.zscore(k.leases, cur.ID), deadline)

	// An ack is accepted from any holder (the work is done), and counted stale.
	require.Equal(t, pubsub.AckResult{Acked: 1, Stale: 1}, e.ack("t", "g", "c1", old))
	require.Equal(t, []string{"g:g:counters", "g:g:wake", "groups", "seq"}, e.keys("t"))
	c := e.stats("t", "g").Counters
	require.Equal(t, pubsub.Counters{Published: 1, Claimed: 2, Acked: 1, Reclaimed: 1, StaleAcks: 1, StaleNacks: 2}, c)
}

// An immediate retry and a release come back with the due time they had, ahead of what became
// due after them; a delayed retry is re-scored to now + delay.
func TestRetryAndReleaseKeepTheirPlaceAndDelayedRetryIsRescored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.publish("t", "1st", "2nd")
	due := e.zscore(k.ready, mem("1"))
	require.Eventually(t, func() bool { return e.redisNow() > due+2 }, 5*time.Second, time.Millisecond)
	e.publish("t", "3rd") // due later than the first two

	d := e.claim("t", "g", "c", 1)[0]
	require.Equal(t, pubsub.NackResult{Requeued: 1}, e.nack("t", "g", "c", 0, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt}))
	require.Equal(t, due, e.zscore(k.ready, mem(d.ID)), "the due time it had, not now")
	require.Equal(t, mems("1", "2", "3"), e.zmembers(k.ready), "retried message is next")
	require.False(t, e.exists(k.leases))
	require.False(t, e.exists(k.dueAt))

	d = e.claim("t", "g", "c", 1)[0]
	require.Equal(t, "1st", string(d.Envelope.Payload))
	require.Equal(t, 2, d.Attempt)
	rel := e.nack("t", "g", "c", 2, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, Release: true})
	require.Equal(t, pubsub.NackResult{Requeued: 1}, rel, "release is not an attempt, even at MaxDeliveries")
	require.Equal(t, map[string]string{d.ID: "1"}, e.hash(k.attempts))
	require.Equal(t, due, e.zscore(k.ready, mem(d.ID)))

	d = e.claim("t", "g", "c", 1)[0]
	require.Equal(t, 2, d.Attempt)
	before := e.redisNow()
	res := e.nack("t", "g", "c", 0, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour})
	require.Equal(t, pubsub.NackResult{Requeued: 1}, res)
	require.InDelta(t, before+3_600_000, e.zscore(k.ready, mem(d.ID)), 5_000, "due an hour after the nack, Redis clock")
	require.Equal(t, []string{"2", "3"}, ids(e.claim("t", "g", "c", 5)), "the delayed retry waits")

	s := e.stats("t", "g")
	require.Equal(t, int64(1), s.Delayed)
	require.Equal(t, int64(2), s.Pending)
	require.Equal(t, int64(2), s.Counters.Nacked, "the release is not counted")
}

func TestRetryKeepsItsPriority(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	id := e.publishWith("t", 0, -7, "low")[0]
	d := e.claim("t", "g", "c", 1)[0]
	e.nack("t", "g", "c", 0, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Minute})
	require.Equal(t, []string{memp(id, -7)}, e.zmembers(k.ready))
}

// A nack wakes a blocked consumer, which then sleeps until the retry is due rather than until
// the end of its Block.
func TestDelayedRetryWakesABlockedConsumerOnTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, _ := e.counted(Options{})
	e.ensureGroup("t", "g")
	e.publish("t", "x")
	d := e.claim("t", "g", "c1", 1)[0]

	const block, delay = 20 * time.Second, 200 * time.Millisecond
	done := claimAsync(e.ctx, b, pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c2", Count: 1, Lease: time.Minute, Block: block})
	e.blocked(1)
	start := time.Now()
	e.nack("t", "g", "c1", 0, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: delay})
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{d.ID}, ids(r.ds))
	require.Equal(t, 2, r.ds[0].Attempt)
	require.GreaterOrEqual(t, r.at.Sub(start), delay-5*time.Millisecond)
	require.Less(t, r.at.Sub(start), block/2)
}
