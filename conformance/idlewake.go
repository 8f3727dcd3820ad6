package conformance

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// Retries on time (Capabilities.OnTimeDelay): a message nacked with a delay, or published
// with one by another process, comes back at its due time while every consumer of the group
// is idle in its blocking wait, not when a consumer next polls (its Block ends, or its idle
// probe runs).
const (
	idleWakeDelay  = 200 * time.Millisecond
	idleWakeRounds = 5
	// idleWakeBlock is the subscriber's Block: far longer than the delay, so that a consumer
	// that learns of a new delayed message only when its blocking claim times out comes
	// back most of idleWakeBlock late.
	idleWakeBlock = 2 * time.Second
	// idleWakeLease is the subscriber's Lease, the default: the reclaim loop, which also
	// promotes due delayed messages, then runs every 15s, too rarely to hide a missed wake-up.
	idleWakeLease = pubsub.LeaseDefault
	// idleWakeSettle lets the consumer reach its blocking wait before the delay is set; the
	// suite asserts meanwhile that nothing is delivered.
	idleWakeSettle = 300 * time.Millisecond
	// idleWakeBound is the lateness the median round must stay under: generous for a loaded
	// machine under -race, and far below what a poll every second or Block would give. It is
	// a correctness bound (a wake-up, not a poll), not a speed target; relq bench and
	// benchmarks.MeasureRetryLateness measure the lateness itself.
	idleWakeBound = 500 * time.Millisecond
)

func testIdleWake(t *testing.T, f Factory) {
	run(t, f, "NackDelay", Options{}, idleWakeNack)
	run(t, f, "PeerDelayedPublish", Options{}, idleWakePeer)
}

// idleWakeNack nacks a message with a delay while the subscription's consumer waits idle,
// idleWakeRounds times, and checks that each redelivery is not early and that the median
// comes within idleWakeBound of its due time.
func idleWakeNack(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().OnTimeDelay {
		t.Skip("the backend declares no Capabilities.OnTimeDelay")
	}
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1, Block: idleWakeBlock, Lease: idleWakeLease})
	ch := subscribe(t, sub, topic)

	lateness := make([]time.Duration, idleWakeRounds)
	for i := range idleWakeRounds {
		msg := newMessage(strconv.Itoa(i))
		publish(t, pub, topic, msg)
		got := receive(t, ch)
		require.Equal(t, msg.UUID, got.UUID, "round %d", i)
		require.Equal(t, 1, pubsub.Attempt(got), "round %d", i)
		noMessage(t, ch, idleWakeSettle)

		// The due time is set from the Redis clock when the nack reaches Redis, after nacked.
		pubsub.SetNackDelay(got, idleWakeDelay)
		nacked := time.Now()
		require.True(t, got.Nack())

		again := receive(t, ch)
		arrived := time.Now()
		require.Equal(t, msg.UUID, again.UUID, "round %d", i)
		require.Equal(t, 2, pubsub.Attempt(again), "round %d", i)
		notEarly(t, arrived.Sub(nacked), idleWakeDelay, fmt.Sprintf("round %d: redelivered", i))
		lateness[i] = arrived.Sub(nacked) - idleWakeDelay
		require.True(t, again.Ack())
		requireSettled(t, h, topic, backend.DefaultGroup, 0)
	}
	requireMedianOnTime(t, "nacked", lateness)
}

// idleWakePeer publishes delayed messages from another process (Harness.Peer) while the
// subscription's consumer waits idle, and checks them as idleWakeNack does.
func idleWakePeer(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().OnTimeDelay {
		t.Skip("the backend declares no Capabilities.OnTimeDelay")
	}
	topic := topicName()
	pub, err := pubsub.NewPublisher(peerOf(t, h), pubsub.PublisherConfig{}, logger)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, pub.Close()) })
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1, Block: idleWakeBlock, Lease: idleWakeLease})
	ch := subscribe(t, sub, topic) // registers the group: a publish from now on reaches it

	lateness := make([]time.Duration, idleWakeRounds)
	for i := range idleWakeRounds {
		noMessage(t, ch, idleWakeSettle)
		lateness[i] = delayedRound(t, pub, topic, ch, i, idleWakeDelay)
		requireSettled(t, h, topic, backend.DefaultGroup, 0)
	}
	requireMedianOnTime(t, "published by a peer", lateness)
}

// requireMedianOnTime checks the median of lateness against idleWakeBound and logs them all.
func requireMedianOnTime(t *testing.T, what string, lateness []time.Duration) {
	t.Helper()
	requireMedianBelow(t, lateness, idleWakeBound, fmt.Sprintf("messages %s while the consumer was idle (Block %v)", what, idleWakeBlock))
}
