package conformance

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testNack(t *testing.T, f Factory) {
	run(t, f, "RedeliveredAfterNackDelay", Options{}, nackDelay)
	run(t, f, "BackoffGivesTheDelay", Options{}, nackBackoff)
}

// A nacked message comes back as the same delivery with the next attempt, not before the
// delay the handler set.
func nackDelay(t *testing.T, h Harness) {
	const delay = 300 * time.Millisecond
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	ch := subscribe(t, sub, topic)

	msg := newMessage("retry me")
	msg.Metadata.Set("k", "v")
	publish(t, pub, topic, msg)

	first := receive(t, ch)
	require.Equal(t, 1, pubsub.Attempt(first))
	pubsub.SetNackDelay(first, delay)
	nackedAt := time.Now()
	require.True(t, first.Nack())

	again := receive(t, ch)
	notEarly(t, time.Since(nackedAt), delay, "redelivered")
	require.Equal(t, 2, pubsub.Attempt(again))
	require.Equal(t, pubsub.DeliveryID(first), pubsub.DeliveryID(again))
	require.Equal(t, msg.UUID, again.UUID)
	require.Equal(t, "retry me", string(again.Payload))
	require.Equal(t, "v", again.Metadata.Get("k"))
	require.Empty(t, again.Metadata.Get(pubsub.MetadataNackDelayMs), "the nack delay of one delivery leaked into the next")
	require.True(t, again.Ack())

	s := requireSettled(t, h, topic, backend.DefaultGroup, 0)
	require.Equal(t, backend.Counters{Published: 1, Claimed: 2, Acked: 1, Nacked: 1}, s.Counters)
}

// Without SetNackDelay the subscriber's NackBackoff decides, asked with the attempt that
// failed.
func nackBackoff(t *testing.T, h Harness) {
	const delay = 200 * time.Millisecond
	var mu sync.Mutex
	var asked []int
	backoff := func(attempt int) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, attempt)
		return delay
	}
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{NackBackoff: backoff})
	ch := subscribe(t, sub, topic)
	publish(t, pub, topic, newMessage("x"))

	msg := receive(t, ch)
	for attempt := 1; attempt <= 2; attempt++ {
		require.Equal(t, attempt, pubsub.Attempt(msg))
		nackedAt := time.Now()
		require.True(t, msg.Nack())
		msg = receive(t, ch)
		notEarly(t, time.Since(nackedAt), delay, "redelivered")
	}
	require.Equal(t, 3, pubsub.Attempt(msg))
	require.True(t, msg.Ack())

	requireSettled(t, h, topic, backend.DefaultGroup, 0)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, 2}, asked)
}
