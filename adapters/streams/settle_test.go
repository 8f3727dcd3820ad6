package streams

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func TestNackParksTheEntryInThePELAndKeepsItsDeliveryID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	id := e.Publish("t", "x")[0]
	d := e.Claim("t", "g", "c", 1)[0]

	before := e.redisNow()
	res := e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: 200 * time.Millisecond})
	after := e.redisNow()
	require.Equal(t, backend.NackResult{Requeued: 1}, res)
	require.Equal(t, map[string]pel{id: {ParkedConsumer, 1}}, e.pel("t", "g"), "parked, the attempt kept")
	r := e.retry("t", "g")
	require.Len(t, r, 1)
	requireDueWithin(t, r[id], before, after, 200*time.Millisecond)
	require.Equal(t, counts{Delayed: 1}, e.counts("t", "g"))
	require.Empty(t, e.Claim("t", "g", "c", 1), "not before its delay")

	require.Eventually(t, func() bool { return e.counts("t", "g").Ready == 1 }, 5*time.Second, 10*time.Millisecond)
	again := e.Claim("t", "g", "c2", 1)[0]
	require.Equal(t, id, again.ID)
	require.Equal(t, 2, again.Attempt)
	require.Equal(t, adaptertest.Envelope("x"), again.Envelope)
	require.Equal(t, map[string]pel{id: {"c2", 2}}, e.pel("t", "g"))
	require.Empty(t, e.retry("t", "g"))
	require.Equal(t, backend.Counters{Published: 1, Claimed: 2, Nacked: 1}, e.Stats("t", "g").Counters)
}

func TestReleaseTakesTheAttemptBackAndComesFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "1st", "2nd", "3rd")
	ds := e.Claim("t", "g", "c", 2)

	res := e.Nack("t", "g", "c", 1, backend.NackItem{ID: ds[0].ID, Attempt: 1, Release: true},
		backend.NackItem{ID: ds[1].ID, Attempt: 1, Release: true})
	require.Equal(t, backend.NackResult{Requeued: 2}, res, "a release is no attempt, even at MaxDeliveries")
	require.Equal(t, map[string]pel{published[0]: {ParkedConsumer, 0}, published[1]: {ParkedConsumer, 0}}, e.pel("t", "g"))
	require.Equal(t, counts{Ready: 3}, e.counts("t", "g"))
	require.Zero(t, e.Stats("t", "g").Counters.Nacked)

	again := e.Claim("t", "g", "c", 3)
	require.Equal(t, published, adaptertest.IDs(again), "released entries first, in order, then the unread one")
	for _, d := range again {
		require.Equal(t, 1, d.Attempt)
	}
}

func TestExtendResetsTheIdleTimeOfHeldEntriesOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	d := e.ClaimLease("t", "g", "c", 1, time.Second)[0]
	time.Sleep(150 * time.Millisecond)
	require.GreaterOrEqual(t, e.idle("t", "g", d.ID), 150*time.Millisecond)

	require.Equal(t, []string{d.ID}, e.Extend("t", "g", "other", d), "another consumer does not hold it")
	require.Equal(t, []string{d.ID}, e.Extend("t", "g", "c", backend.Delivery{ID: d.ID, Attempt: 2}), "nor another attempt")
	require.GreaterOrEqual(t, e.idle("t", "g", d.ID), 150*time.Millisecond, "fenced calls reset nothing")

	// Reset: idle no longer than since the Extend began (rounded to Redis's milliseconds);
	// without the reset it would be the 150ms and more it was before.
	extended := time.Now()
	require.Empty(t, e.Extend("t", "g", "c", d))
	idle := e.idle("t", "g", d.ID)
	require.LessOrEqual(t, idle, time.Since(extended)+time.Millisecond, "the idle time was not reset")
	require.Equal(t, map[string]pel{d.ID: {"c", 1}}, e.pel("t", "g"), "same holder, same count")
	require.Equal(t, "60000", e.Hash(e.gk("t", "g").leases)["c"], "the heartbeat's lease is the consumer's lease now")
}

func TestStaleNackAndExtendAreIgnoredAfterAnotherConsumerReclaimed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	id := e.Publish("t", "x")[0]
	old := e.ClaimLease("t", "g", "c1", 1, 50*time.Millisecond)[0]
	require.Eventually(t, func() bool { return e.ReclaimLease("t", "g", 0, time.Hour).Reclaimed == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, map[string]pel{id: {ParkedConsumer, 1}}, e.pel("t", "g"), "reclaimed without counting an attempt")
	require.Equal(t, backend.ReclaimResult{}, e.ReclaimLease("t", "g", 0, time.Hour), "reclaim is idempotent")

	cur := e.Claim("t", "g", "c2", 1)[0]
	require.Equal(t, 2, cur.Attempt)
	require.Equal(t, backend.NackResult{Stale: 1}, e.Nack("t", "g", "c1", 0, backend.NackItem{ID: old.ID, Attempt: old.Attempt}))
	require.Equal(t, backend.NackResult{Stale: 1}, e.Nack("t", "g", "c2", 0, backend.NackItem{ID: old.ID, Attempt: old.Attempt}), "the same ID with the old attempt")
	require.Equal(t, []string{old.ID}, e.Extend("t", "g", "c1", old))
	require.Equal(t, map[string]pel{id: {"c2", 2}}, e.pel("t", "g"), "stale calls changed nothing")

	// An ack is accepted from any holder (the work is done), and counted stale.
	require.Equal(t, backend.AckResult{Acked: 1, Stale: 1}, e.Ack("t", "g", "c1", old))
	require.Empty(t, e.pel("t", "g"))
	require.Equal(t, backend.AckResult{Stale: 1}, e.Ack("t", "g", "c2", cur), "acking twice acks nothing")
	require.Equal(t, backend.Counters{Published: 1, Claimed: 2, Acked: 1, Reclaimed: 1, StaleAcks: 2, StaleNacks: 2},
		e.Stats("t", "g").Counters)
}

func TestReclaimMeasuresIdleTimeAgainstEachHoldersLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "short", "long", "foreign")
	short := e.ClaimLease("t", "g", "short", 1, 100*time.Millisecond)[0]
	e.ClaimLease("t", "g", "long", 1, time.Hour)
	// A consumer relq has no lease for, as another program would read.
	_, err := e.C.XReadGroup(e.Ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "foreign", Streams: []string{e.tk("t").stream, ">"}, Count: 1}).Result()
	require.NoError(t, err)

	time.Sleep(150 * time.Millisecond)
	res := e.ReclaimLease("t", "g", 0, time.Hour)
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1}, withoutExpiry(res))
	requireExpiryNear(t, time.Hour, res, "long's and foreign's hour-long leases are left")
	require.Equal(t, map[string]pel{published[0]: {ParkedConsumer, 1}, published[1]: {"long", 1}, published[2]: {"foreign", 1}}, e.pel("t", "g"))
	require.Equal(t, short.ID, published[0])

	// The orphan lease of the call that reads a foreign holder judges it.
	other := e.Publish("t", "other")[0]
	_, err = e.C.XReadGroup(e.Ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "other", Streams: []string{e.tk("t").stream, ">"}, Count: 1}).Result()
	require.NoError(t, err)
	time.Sleep(150 * time.Millisecond)
	res = e.ReclaimLease("t", "g", 0, 100*time.Millisecond)
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1, Removed: 1}, withoutExpiry(res),
		"the orphan lease judges the foreign consumer; short, found empty a lease ago, is deleted")
	requireExpiryNear(t, time.Hour, res, "long's and foreign's leases are left")
	require.Equal(t, pel{ParkedConsumer, 1}, e.pel("t", "g")[other])
	require.Equal(t, counts{Ready: 2, Pending: 2}, e.counts("t", "g"))
}

func TestReclaimDeadLettersAnExpiredLeaseAtMaxDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	id := e.Publish("t", "x")[0]
	e.ClaimLease("t", "g", "c", 1, 10*time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, backend.ReclaimResult{DeadLettered: 1}, e.ReclaimLease("t", "g", 1, time.Hour))
	require.Empty(t, e.pel("t", "g"))
	dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, id, dls[0].ID)
	require.Equal(t, "lease expired after 1 attempts", dls[0].Reason)
}

func TestReclaimRemovesConsumersIdleWithNothingPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.ConsumerIdleTimeout = 50 * time.Millisecond })
	e.EnsureGroup("t", "g")
	e.Publish("t", "x", "y")
	done := e.ClaimLease("t", "g", "gone", 1, 20*time.Millisecond)
	e.Ack("t", "g", "gone", done...)
	e.Claim("t", "g", "busy", 1)
	// Once gone's lease ended, a Reclaim finds it empty and marks it quiet; one 50 ms later
	// deletes it.
	var cs []redis.XInfoConsumer
	require.Eventually(t, func() bool {
		e.ReclaimLease("t", "g", 0, time.Hour)
		var err error
		cs, err = e.C.XInfoConsumers(e.Ctx, e.tk("t").stream, "g").Result()
		require.NoError(t, err)
		return len(cs) == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, "busy", cs[0].Name, "a consumer with pending entries stays")
	require.Equal(t, map[string]string{"busy": "60000"}, e.Hash(e.gk("t", "g").leases))
}

func TestDeleteOnAckDeletesAnEntryOnceEveryGroupIsDoneWithIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, deleteOnAck)
	stream := e.tk("t").stream
	e.EnsureGroup("t", "a")
	e.EnsureGroup("t", "b")
	published := e.Publish("t", "1", "2")

	da := e.Claim("t", "a", "c", 2)
	require.Equal(t, backend.AckResult{Acked: 2}, e.Ack("t", "a", "c", da...))
	require.Equal(t, int64(2), e.xlen(stream), "group b has not read them")

	db := e.Claim("t", "b", "c", 2)
	e.Nack("t", "b", "c", 0, backend.NackItem{ID: db[1].ID, Attempt: 1, Delay: time.Hour})
	e.Ack("t", "b", "c", db[0])
	entries, err := e.C.XRange(e.Ctx, stream, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 1, "the first is done everywhere; the second waits for a retry in b")
	require.Equal(t, published[1], entries[0].ID)

	e.Ack("t", "b", "c", backend.Delivery{ID: db[1].ID, Attempt: 1})
	require.Zero(t, e.xlen(stream))
	require.Empty(t, e.retry("t", "b"))
}

func TestAStaleRetryIsDroppedWithoutSpinning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "x", "y")
	d := e.Claim("t", "g", "c", 1)[0]
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: 1})
	// Another program acks the parked entry behind relq's back (an old consumer in the
	// same group, say): the retry schedule is stale.
	require.NoError(t, e.C.XAck(e.Ctx, e.tk("t").stream, "g", d.ID).Err())

	const block = 20 * time.Second
	start := time.Now()
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 5, Lease: time.Minute, Block: block})
	require.NoError(t, err)
	require.Equal(t, published[1:], adaptertest.IDs(ds))
	require.Less(t, time.Since(start), block/2, "claimed at once, not at the end of Block")
	require.Empty(t, e.retry("t", "g"))
}
