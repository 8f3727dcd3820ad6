package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/pubsub"
)

func testOrder(t *testing.T, f Factory) {
	run(t, f, "FIFOWithOneConsumer", Options{}, orderFIFO)
	run(t, f, "PriorityFirst", Options{}, orderPriority)
}

// With one subscriber handling one message at a time, messages arrive in publish order,
// across publish batches and prefetch batches.
func orderFIFO(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().FIFO {
		t.Skip("the backend declares no Capabilities.FIFO")
	}
	const total, batch = 200, 25
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msgs := newMessages(total)
	// Half is waiting before the subscriber starts, half arrives while it consumes.
	for i := 0; i < total/2; i += batch {
		publish(t, pub, topic, msgs[i:i+batch]...)
	}
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1})
	ch := subscribe(t, sub, topic)
	for i := total / 2; i < total; i += batch {
		publish(t, pub, topic, msgs[i:i+batch]...)
	}

	got := make([]string, 0, total)
	for range total {
		msg := receive(t, ch)
		got = append(got, string(msg.Payload))
		require.True(t, msg.Ack())
	}
	want := make([]string, total)
	for i, m := range msgs {
		want[i] = string(m.Payload)
	}
	require.Equal(t, want, got, "payloads are the publish index")
	requireSettled(t, h, topic, pubsub.DefaultGroup, 0)
}

// Where a backend orders by priority, a higher priority published later is delivered before
// lower ones that were already waiting.
func orderPriority(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().Priorities {
		t.Skip("the backend declares no Capabilities.Priorities")
	}
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	low, high := newMessages(3), newMessages(3)
	for i := range low {
		pubsub.SetPriority(low[i], 0)
		pubsub.SetPriority(high[i], 5)
		high[i].Payload = []byte("high")
	}
	publish(t, pub, topic, low...)
	publish(t, pub, topic, high...)

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1, Prefetch: -1})
	ch := subscribe(t, sub, topic)
	for i := range len(low) + len(high) {
		msg := receive(t, ch)
		if i < len(high) {
			require.Equal(t, "high", string(msg.Payload), "delivery %d", i)
		}
		require.True(t, msg.Ack())
	}
	requireSettled(t, h, topic, pubsub.DefaultGroup, 0)
}
