package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testLease(t *testing.T, f Factory) {
	run(t, f, "UnackedMessageIsReclaimed", Options{}, leaseReclaimed)
	run(t, f, "HeartbeatKeepsSlowHandlersLease", Options{}, leaseHeartbeat)
	run(t, f, "StaleHolderIsFenced", Options{}, leaseStaleFenced)
	run(t, f, "StaleAckStillCompletes", Options{}, leaseStaleAck)
	run(t, f, "LateAckCompletesAReclaimedMessage", Options{}, leaseLateAck)
	run(t, f, "ExtendKeepsLease", Options{}, leaseExtend)
	run(t, f, "OrphanIsRecovered", Options{}, leaseOrphan)
}

// A consumer that claims a message and dies never acks it: once its lease expires another
// subscriber gets it, as the same delivery with attempt 2.
func leaseReclaimed(t *testing.T, h Harness) {
	const lease = 500 * time.Millisecond
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msg := newMessage("orphaned by a crash")
	publish(t, pub, topic, msg)

	claimStart := time.Now()
	crashed := claimN(t, h, topic, backend.DefaultGroup, "crashed", 1, lease)[0]
	require.Equal(t, 1, crashed.Attempt)

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{ReclaimInterval: 100 * time.Millisecond})
	got := receive(t, subscribe(t, sub, topic))
	notEarly(t, time.Since(claimStart), lease, "reclaimed")
	require.Equal(t, msg.UUID, got.UUID)
	require.Equal(t, crashed.ID, pubsub.DeliveryID(got))
	require.Equal(t, 2, pubsub.Attempt(got))
	require.True(t, got.Ack())

	s := requireSettled(t, h, topic, backend.DefaultGroup, 0)
	require.Equal(t, backend.Counters{Published: 1, Claimed: 2, Acked: 1, Reclaimed: 1}, s.Counters)
}

// A handler that runs twice as long as the lease keeps its message: heartbeats extend the
// lease, so a second subscriber that reclaims eagerly never gets it. A heartbeat may be
// Lease - HeartbeatInterval (1.9s) late before the lease expires: slack for a loaded machine,
// whose scheduler can hold a goroutine up for hundreds of ms.
func leaseHeartbeat(t *testing.T, h Harness) {
	const lease = 2 * time.Second
	const handlerTime = 2 * lease
	topic := topicName()
	cfg := pubsub.SubscriberConfig{
		Lease:             lease,
		HeartbeatInterval: 100 * time.Millisecond,
		ReclaimInterval:   50 * time.Millisecond,
	}
	r := &recorder{}
	slow := func(*message.Message) bool { time.Sleep(handlerTime); return true }
	for i := range 2 {
		sub := newSubscriber(t, h, cfg)
		consume(subscribe(t, sub, topic), r, i, 1, slow)
	}
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	publish(t, pub, topic, newMessage("slow"))

	require.True(t, poll(waitTimeout, func() bool { return r.count() > 0 }), "message not received")
	s := requireSettled(t, h, topic, backend.DefaultGroup, 0)
	require.Equal(t, backend.Counters{Published: 1, Claimed: 1, Acked: 1}, s.Counters, "the lease was lost while the handler ran")
	require.Equal(t, 1, r.count())
}

// A consumer whose lease expired and whose message went to another consumer no longer holds
// it: its nack is ignored (and counted), its heartbeat reports the delivery lost, and the
// new holder's ack works.
func leaseStaleFenced(t *testing.T, h Harness) {
	ctx := context.Background()
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 1)
	a := staleSetup(t, h, topic)
	b := claimN(t, h, topic, group, "b", 1, 30*time.Second)[0]
	require.Equal(t, a.ID, b.ID)
	require.Equal(t, 2, b.Attempt)

	nr, err := h.Backend.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "a",
		Items: []backend.NackItem{{ID: a.ID, Attempt: a.Attempt, Reason: "a gave up"}}})
	require.NoError(t, err)
	require.Equal(t, backend.NackResult{Stale: 1}, nr)

	lost, err := h.Backend.Extend(ctx, &backend.ExtendParams{Topic: topic, Group: group, Consumer: "a",
		Items: held(a), Lease: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{a.ID}, lost)

	lost, err = h.Backend.Extend(ctx, &backend.ExtendParams{Topic: topic, Group: group, Consumer: "b",
		Items: held(b), Lease: 30 * time.Second})
	require.NoError(t, err)
	require.Empty(t, lost, "the holder's heartbeat lost the delivery")
	require.Equal(t, counts{Pending: 1}, countsOf(stats(t, h, topic, group)), "the stale nack changed the state")

	ar, err := h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "b", Items: held(b)})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Acked: 1}, ar)
	s := requireSettled(t, h, topic, group, 0)
	require.Equal(t, backend.Counters{Published: 1, Claimed: 2, Acked: 1, Reclaimed: 1, StaleNacks: 1}, s.Counters)
}

// An ack is accepted from any holder: the work is done. A stale holder's ack completes the
// delivery (counted as stale), and acking again is a no-op.
func leaseStaleAck(t *testing.T, h Harness) {
	ctx := context.Background()
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 1)
	a := staleSetup(t, h, topic)
	b := claimN(t, h, topic, group, "b", 1, 30*time.Second)[0]

	ar, err := h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "a", Items: held(a)})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Acked: 1, Stale: 1}, ar)
	s := requireSettled(t, h, topic, group, 0)
	require.Equal(t, int64(1), s.Counters.StaleAcks)
	require.Equal(t, int64(1), s.Counters.Acked)

	ar, err = h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "b", Items: held(b)})
	require.NoError(t, err)
	require.Zero(t, ar.Acked, "a delivery was acked twice")
	requireSettled(t, h, topic, group, 0)
}

// A holder whose lease expired acks after Reclaim put the message back in ready, before any
// consumer took it again: the work is done, so the ack is accepted (counted stale) on every
// backend, and no consumer is given the message again. Acking it once more changes nothing.
func leaseLateAck(t *testing.T, h Harness) {
	ctx := context.Background()
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 1)
	a := staleSetup(t, h, topic)
	ar, err := h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "a", Items: held(a)})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Acked: 1, Stale: 1}, ar)
	ar, err = h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "a", Items: held(a)})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Stale: 1}, ar, "a late ack counted twice")

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	r := &recorder{}
	consume(subscribe(t, sub, topic), r, 0, 1, nil)
	after := newMessage("after")
	publish(t, newPublisher(t, h, pubsub.PublisherConfig{}), topic, after)
	r.waitAll(t, []string{after.UUID})
	s := requireSettled(t, h, topic, group, 0)
	require.Equal(t, 1, r.count(), "a message acked late was delivered again: %+v", r.list())
	require.Equal(t, int64(2), s.Counters.Acked)
	require.Equal(t, int64(2), s.Counters.StaleAcks)
}

// staleSetup claims the topic's one message as consumer "a" with a short lease and waits
// until Reclaim returned it to ready: "a" is now a stale holder.
func staleSetup(t *testing.T, h Harness, topic string) backend.Delivery {
	t.Helper()
	a := claimN(t, h, topic, backend.DefaultGroup, "a", 1, 200*time.Millisecond)[0]
	require.Equal(t, 1, a.Attempt)
	reclaimUntil(t, h, backend.ReclaimParams{Topic: topic, Group: backend.DefaultGroup},
		func(r backend.ReclaimResult) bool { return r.Reclaimed == 1 })
	require.Equal(t, counts{Ready: 1}, countsOf(stats(t, h, topic, backend.DefaultGroup)))
	return a
}

// Extend moves the deadline: past the original lease, Reclaim leaves the delivery alone.
func leaseExtend(t *testing.T, h Harness) {
	const lease = 300 * time.Millisecond
	ctx := context.Background()
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 1)
	claimStart := time.Now()
	d := claimN(t, h, topic, group, "c", 1, lease)[0]
	lost, err := h.Backend.Extend(ctx, &backend.ExtendParams{Topic: topic, Group: group, Consumer: "c",
		Items: held(d), Lease: 30 * time.Second})
	require.NoError(t, err)
	require.Empty(t, lost)

	time.Sleep(time.Until(claimStart.Add(2 * lease)))
	res, err := h.Backend.Reclaim(ctx, &backend.ReclaimParams{Topic: topic, Group: group})
	require.NoError(t, err)
	require.Zero(t, res.Reclaimed, "an extended lease was reclaimed at its original deadline")
	require.Equal(t, counts{Pending: 1}, countsOf(stats(t, h, topic, group)))

	ar, err := h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "c", Items: held(d)})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Acked: 1}, ar)
	requireSettled(t, h, topic, group, 0)
}

// A delivery that reached pending without a lease record (a consumer that crashed in
// between) gets a lease at first sight and is delivered again when it expires.
func leaseOrphan(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().PendingOrphans {
		t.Skip("the backend declares no Capabilities.PendingOrphans: a delivery cannot be pending without a lease")
	}
	if h.Faults == nil {
		t.Skip("the Harness has no Faults to inject an orphan with")
	}
	const orphanLease = 300 * time.Millisecond
	ctx := context.Background()
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	published := publishDirect(t, h, topic, 1)
	id, err := h.Faults.InjectOrphan(ctx, topic, group)
	require.NoError(t, err)
	require.Equal(t, published[0], id, "InjectOrphan did not orphan the published message")

	found := time.Now()
	res, err := h.Backend.Reclaim(ctx, &backend.ReclaimParams{Topic: topic, Group: group, OrphanLease: orphanLease})
	require.NoError(t, err)
	require.Equal(t, 1, res.Orphans, "Reclaim did not find the orphan")

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{ReclaimInterval: 50 * time.Millisecond})
	got := receive(t, subscribe(t, sub, topic))
	notEarly(t, time.Since(found), orphanLease, "orphan redelivered")
	require.Equal(t, id, pubsub.DeliveryID(got))
	require.True(t, got.Ack())
	requireSettled(t, h, topic, group, 0)
}
