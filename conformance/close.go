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

func testClose(t *testing.T, f Factory) {
	run(t, f, "ReleasesPrefetchedAtOnce", Options{}, closeReleasesPrefetched)
	run(t, f, "IdempotentWhileBlockedOnUnreadChannel", Options{}, closeBlocked)
	run(t, f, "WaitsForInFlightHandler", Options{}, closeWaitsForHandler)
	run(t, f, "GivesUpAfterCloseTimeout", Options{}, closeTimeout)
	run(t, f, "ContextCancelEndsSubscription", Options{}, closeContextCancel)
}

// Messages a subscriber prefetched but never handed out go back to ready when it closes, at
// once (no lease to wait for) and without counting as an attempt.
func closeReleasesPrefetched(t *testing.T, h Harness) {
	const total = 50
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msgs := inOrder(h, newMessages(total)...)
	publish(t, pub, topic, msgs...)

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Prefetch: total, Lease: 30 * time.Second})
	first := receive(t, subscribe(t, sub, topic))
	require.Equal(t, msgs[0].UUID, first.UUID)
	require.True(t, first.Ack())
	require.NoError(t, sub.Close())

	s := stats(t, h, topic, backend.DefaultGroup)
	require.Equal(t, counts{Ready: total - 1}, countsOf(s), "state right after Close")
	require.Equal(t, int64(1), s.Counters.Acked, "the ack made before Close was not flushed")

	r := &recorder{}
	next := newSubscriber(t, h, pubsub.SubscriberConfig{})
	consume(subscribe(t, next, topic), r, 0, 1, nil)
	r.waitAll(t, uuids(msgs[1:]))
	for _, s := range r.list() {
		require.Equal(t, 1, s.Attempt, "released message %s counted as an attempt", s.Payload)
	}
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// Close while the subscriber waits to hand a message to nobody: it returns without waiting
// for CloseTimeout, closes the channel, releases the message, and may be called again.
func closeBlocked(t *testing.T, h Harness) {
	const closeTimeout = 10 * time.Second
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{CloseTimeout: closeTimeout, Lease: 30 * time.Second})
	ch := subscribe(t, sub, topic)
	publish(t, pub, topic, newMessages(3)...)
	requireCounts(t, h, topic, backend.DefaultGroup, counts{Pending: 3})

	start := time.Now()
	require.NoError(t, sub.Close())
	require.Less(t, time.Since(start), closeTimeout/2, "Close waited for a message nobody had received")
	select {
	case msg, ok := <-ch:
		require.False(t, ok, "a message was delivered after Close returned: %v", msg)
	case <-time.After(time.Second):
		require.Fail(t, "the channel is still open after Close returned")
	}
	require.NoError(t, sub.Close(), "second Close")
	require.Equal(t, counts{Ready: 3}, countsOf(stats(t, h, topic, backend.DefaultGroup)))

	_, err := sub.Subscribe(context.Background(), topic)
	require.ErrorIs(t, err, backend.ErrClosed)
}

// Close waits for a handler that holds a message, and its late ack still counts.
func closeWaitsForHandler(t *testing.T, h Harness) {
	const work = 300 * time.Millisecond
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{CloseTimeout: 10 * time.Second})
	ch := subscribe(t, sub, topic)
	publish(t, pub, topic, newMessage("x"))
	msg := receive(t, ch)

	start := time.Now()
	go func() {
		time.Sleep(work)
		msg.Ack()
	}()
	require.NoError(t, sub.Close())
	require.GreaterOrEqual(t, time.Since(start), work-clockSlack, "Close returned before the in-flight handler finished")
	s := stats(t, h, topic, backend.DefaultGroup)
	require.Equal(t, counts{}, countsOf(s), "state right after Close")
	require.Equal(t, int64(1), s.Counters.Acked)
}

// A handler that never finishes does not block Close beyond CloseTimeout; its message keeps
// its lease and another subscriber gets it when the lease expires.
func closeTimeout(t *testing.T, h Harness) {
	const closeTimeout, lease = 300 * time.Millisecond, 500 * time.Millisecond
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{CloseTimeout: closeTimeout, Lease: lease})
	ch := subscribe(t, sub, topic)
	msg := newMessage("stuck")
	publish(t, pub, topic, msg)
	stuck := receive(t, ch) // never acked

	start := time.Now()
	require.NoError(t, sub.Close())
	require.Less(t, time.Since(start), closeTimeout+waitTimeout, "Close did not give up after CloseTimeout")

	next := newSubscriber(t, h, pubsub.SubscriberConfig{ReclaimInterval: 50 * time.Millisecond})
	got := receive(t, subscribe(t, next, topic))
	require.Equal(t, msg.UUID, got.UUID)
	require.Equal(t, pubsub.DeliveryID(stuck), pubsub.DeliveryID(got))
	require.Equal(t, 2, pubsub.Attempt(got))
	require.True(t, got.Ack())
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// Cancelling the context of Subscribe ends that subscription like Close: the channel closes
// and the messages it held go back to ready.
func closeContextCancel(t *testing.T, h Harness) {
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Lease: 30 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	msgs := newMessages(3)
	publish(t, pub, topic, msgs...)
	requireCounts(t, h, topic, backend.DefaultGroup, counts{Pending: 3})

	cancel()
	drained := drain(t, ch)
	requireCounts(t, h, topic, backend.DefaultGroup, counts{Ready: int64(len(msgs) - len(drained))})

	var rest []string
	for _, m := range msgs {
		if !drained[m.UUID] {
			rest = append(rest, m.UUID)
		}
	}
	r := &recorder{}
	consume(subscribe(t, sub, topic), r, 0, 1, nil)
	r.waitAll(t, rest)
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// drain acks whatever ch still delivers until it closes, and returns the UUIDs it acked.
func drain(t *testing.T, ch <-chan *message.Message) map[string]bool {
	t.Helper()
	acked := map[string]bool{}
	timeout := time.After(waitTimeout)
	for {
		select {
		case msg, ok := <-ch:
			if !ok {
				return acked
			}
			msg.Ack()
			acked[msg.UUID] = true
		case <-timeout:
			require.FailNow(t, "the channel was not closed after its context was cancelled")
		}
	}
}
