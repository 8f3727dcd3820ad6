package list

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
	require.Equal(t, []string{old.ID}, e.lrange(k.ready))
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

	require.Equal(t, []string{cur.ID}, e.lrange(k.processing), "stale calls changed nothing")
	require.Equal(t, map[string]string{cur.ID: "c2"}, e.hash(k.holders))
	require.Equal(t, map[string]string{cur.ID: "2"}, e.hash(k.attempts))
	require.Equal(t, deadline, e.zscore(k.leases, cur.ID))
	require.Empty(t, e.lrange(k.ready))

	lost, err = e.b.Extend(e.ctx, &pubsub.ExtendParams{Topic: "t", Group: "g", Consumer: "c2", Items: held(cur), Lease: time.Hour})
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Greater(t, e.zscore(k.leases, cur.ID), deadline)

	// An ack is accepted from any holder (the work is done), and counted stale.
	require.Equal(t, pubsub.AckResult{Acked: 1, Stale: 1}, e.ack("t", "g", "c1", old))
	require.Equal(t, []string{"g:g:counters", "groups", "seq"}, e.keys("t"))
	c := e.stats("t", "g").Counters
	require.Equal(t, pubsub.Counters{Published: 1, Claimed: 2, Acked: 1, Reclaimed: 1, StaleAcks: 1, StaleNacks: 2}, c)
}

func TestNackRetriesAtTheConsumeEndAndReleaseKeepsTheAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.publish("t", "1st", "2nd")

	d := e.claim("t", "g", "c", 1)[0]
	require.Equal(t, pubsub.NackResult{Requeued: 1}, e.nack("t", "g", "c", 0, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt}))
	require.Equal(t, []string{"2", "1"}, e.lrange(k.ready), "retried message is next")
	require.Empty(t, e.lrange(k.processing))
	require.Empty(t, e.zmembers(k.leases))

	d = e.claim("t", "g", "c", 1)[0]
	require.Equal(t, "1st", string(d.Envelope.Payload))
	require.Equal(t, 2, d.Attempt)
	rel := e.nack("t", "g", "c", 2, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, Release: true})
	require.Equal(t, pubsub.NackResult{Requeued: 1}, rel, "release is not an attempt, even at MaxDeliveries")
	require.Equal(t, map[string]string{d.ID: "1"}, e.hash(k.attempts))

	d = e.claim("t", "g", "c", 1)[0]
	require.Equal(t, 2, d.Attempt)
	res := e.nack("t", "g", "c", 0, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour})
	require.Equal(t, pubsub.NackResult{Requeued: 1}, res)
	require.Equal(t, []string{d.ID}, e.zmembers(k.delayed))
	require.Equal(t, []string{"2"}, ids(e.claim("t", "g", "c", 5)), "the delayed retry waits")

	s := e.stats("t", "g")
	require.Equal(t, int64(1), s.Delayed)
	require.Equal(t, int64(1), s.Pending)
	require.Equal(t, int64(2), s.Counters.Nacked, "the release is not counted")
}

func TestDelayedMessagesArePromotedWhenDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	id := e.publishDelayed("t", time.Hour, "later")[0]
	require.Empty(t, e.lrange(k.ready))
	require.Equal(t, []string{id}, e.zmembers(k.delayed))
	require.Empty(t, e.claim("t", "g", "c", 1))

	require.NoError(t, e.c.ZAdd(e.ctx, k.delayed, zmember(1, id)).Err()) // due long ago
	require.Equal(t, pubsub.ReclaimResult{Promoted: 1}, e.reclaim("t", "g", 0))
	require.Equal(t, []string{id}, e.lrange(k.ready))
	require.False(t, e.exists(k.delayed))
	require.Equal(t, 1.0, e.zscore(k.readyAt, id), "ready since its due time")

	// Claim promotes by itself, and a blocking claim wakes up when the next one is due.
	soon := e.publishDelayed("t", 50*time.Millisecond, "soon")[0]
	ds, err := e.b.Claim(e.ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 5, Lease: time.Minute, Block: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{id}, ids(ds))
	start := time.Now()
	ds, err = e.b.Claim(e.ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 5, Lease: time.Minute, Block: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{soon}, ids(ds))
	require.Less(t, time.Since(start), 5*time.Second, "woke up for the due message, not at the end of Block")
}
