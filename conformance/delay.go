package conformance

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/components/delay"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/pubsub"
)

// delayTolerance bounds how late a delayed message may arrive after it is due. The
// subscriber waits at most Block (100ms here) between claims; the rest is headroom for a
// loaded machine running the suite under -race.
const delayTolerance = 400 * time.Millisecond

func testDelay(t *testing.T, f Factory) {
	run(t, f, "SetDelay", Options{}, func(t *testing.T, h Harness) {
		delayCase(t, h, func(msg *message.Message, _ time.Time) time.Duration {
			pubsub.SetDelay(msg, 500*time.Millisecond)
			return 500 * time.Millisecond
		})
	})
	run(t, f, "WatermillDelayedFor", Options{}, func(t *testing.T, h Harness) {
		delayCase(t, h, func(msg *message.Message, _ time.Time) time.Duration {
			delay.Message(msg, delay.For(500*time.Millisecond))
			return 500 * time.Millisecond
		})
	})
	run(t, f, "WatermillDelayedUntil", Options{}, func(t *testing.T, h Harness) {
		delayCase(t, h, func(msg *message.Message, start time.Time) time.Duration {
			// RFC 3339 carries whole seconds: the message is due at the truncated time.
			until := start.Add(1500 * time.Millisecond).UTC().Truncate(time.Second)
			msg.Metadata.Set(delay.DelayedUntilKey, until.Format(time.RFC3339))
			return until.Sub(start)
		})
	})
}

// delayCase publishes one message that mark delays, and checks that an idle subscriber gets
// it not before it is due and not much later. mark returns the delay measured from start,
// taken just before Publish (the due time is set from the Redis clock during Publish).
func delayCase(t *testing.T, h Harness, mark func(msg *message.Message, start time.Time) time.Duration) {
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	ch := subscribe(t, sub, topic)

	msg := newMessage("later")
	start := time.Now()
	due := mark(msg, start)
	publish(t, pub, topic, msg)
	published := time.Now()

	s := stats(t, h, topic, pubsub.DefaultGroup)
	if time.Since(start) < due-100*time.Millisecond { // still surely not due
		require.Equal(t, counts{Delayed: 1}, countsOf(s), "state while the message is delayed")
	}

	got := receive(t, ch)
	arrived := time.Now()
	require.Equal(t, msg.UUID, got.UUID)
	notEarly(t, arrived.Sub(start), due, "delivered")
	late := arrived.Sub(published) - due
	require.LessOrEqual(t, late, delayTolerance, "delivered %v after it was due", late)
	require.Equal(t, 1, pubsub.Attempt(got))
	require.True(t, got.Ack())
	requireSettled(t, h, topic, pubsub.DefaultGroup, 0)
}
