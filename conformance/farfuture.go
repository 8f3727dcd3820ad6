package conformance

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/components/delay"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// Far-future delays: a delay is never cut short. Publish rejects one beyond backend.MaxDelay
// with a *backend.DelayError and stores nothing of the batch; one of MaxDelay is held; a nack
// delay beyond MaxDelay dead-letters the message rather than redeliver it early.
func testFarFuture(t *testing.T, f Factory) {
	run(t, f, "PublishBeyondMaxDelay", Options{}, farFuturePublish)
	run(t, f, "HeldForMaxDelay", Options{}, farFutureHeld)
	run(t, f, "NackBeyondMaxDelay", Options{}, farFutureNack)
}

func farFuturePublish(t *testing.T, h Harness) {
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	cases := map[string]struct {
		key  string
		mark func(*message.Message)
	}{
		"ms at MaxInt64": {pubsub.MetadataDelayMs, func(m *message.Message) {
			m.Metadata.Set(pubsub.MetadataDelayMs, strconv.FormatInt(math.MaxInt64, 10))
		}},
		"ms one past MaxDelay": {pubsub.MetadataDelayMs, func(m *message.Message) {
			m.Metadata.Set(pubsub.MetadataDelayMs, strconv.FormatInt(backend.MaxDelay.Milliseconds()+1, 10))
		}},
		"SetDelay past MaxDelay": {pubsub.MetadataDelayMs, func(m *message.Message) {
			pubsub.SetDelay(m, backend.MaxDelay+time.Millisecond)
		}},
		"Watermill until year 9999": {pubsub.WatermillDelayedUntil, func(m *message.Message) {
			m.Metadata.Set(delay.DelayedUntilKey, "9999-12-31T23:59:59Z")
		}},
		"Watermill for past MaxDelay": {pubsub.WatermillDelayedFor, func(m *message.Message) {
			m.Metadata.Set(delay.DelayedForKey, (backend.MaxDelay + time.Hour).String())
		}},
	}
	for name, c := range cases {
		ok, far := newMessage("fine"), newMessage("far")
		c.mark(far)
		err := pub.Publish(topic, ok, far)
		require.ErrorIs(t, err, backend.ErrDelayTooLong, name)
		var de *backend.DelayError
		require.True(t, errors.As(err, &de), "%s: got %T %v", name, err, err)
		require.Equal(t, far.UUID, de.UUID, name)
		require.Equal(t, c.key, de.Key, name)
	}
	s := stats(t, h, topic, backend.DefaultGroup)
	require.Equal(t, counts{}, countsOf(s), "a rejected batch stores nothing")
	require.Zero(t, s.Counters.Published)
}

// Messages delayed by MaxDelay, however it is set, stay delayed: Reclaim promotes none and
// Claim returns none.
func farFutureHeld(t *testing.T, h Harness) {
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	group := backend.DefaultGroup
	ensureGroup(t, h, topic, group)

	set, until, forKey := newMessage("SetDelay"), newMessage("until"), newMessage("for")
	pubsub.SetDelay(set, backend.MaxDelay)
	until.Metadata.Set(delay.DelayedUntilKey, time.Now().Add(backend.MaxDelay-time.Hour).UTC().Format(time.RFC3339))
	forKey.Metadata.Set(delay.DelayedForKey, backend.MaxDelay.String())
	publish(t, pub, topic, set, until, forKey)

	r, err := h.Backend.Reclaim(context.Background(), &backend.ReclaimParams{Topic: topic, Group: group, OrphanLease: shortLease})
	require.NoError(t, err)
	require.Zero(t, r.Promoted, "promoted a message due in a century")
	ds, err := h.Backend.Claim(context.Background(), &backend.ClaimParams{Topic: topic, Group: group, Consumer: "c", Count: 10, Lease: shortLease})
	require.NoError(t, err)
	require.Empty(t, ds, "claimed a message due in a century")
	require.Equal(t, counts{Delayed: 3}, countsOf(stats(t, h, topic, group)))
}

// A nack delay of MaxDelay holds the message; one beyond it, which SetNackDelay's metadata
// can carry up to MaxInt64 ms, dead-letters the message with the reason, never an early
// redelivery.
func farFutureNack(t *testing.T, h Harness) {
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	ch := subscribe(t, sub, topic)

	held := newMessage("held")
	publish(t, pub, topic, held)
	got := receive(t, ch)
	require.Equal(t, held.UUID, got.UUID)
	pubsub.SetNackDelay(got, backend.MaxDelay)
	require.True(t, got.Nack())
	requireCounts(t, h, topic, backend.DefaultGroup, counts{Delayed: 1})

	far := newMessage("far")
	publish(t, pub, topic, far)
	got = receive(t, ch)
	require.Equal(t, far.UUID, got.UUID, "the held message came back early")
	got.Metadata.Set(pubsub.MetadataNackDelayMs, strconv.FormatInt(math.MaxInt64, 10))
	require.True(t, got.Nack())
	s := requireCounts(t, h, topic, backend.DefaultGroup, counts{Delayed: 1, Dead: 1})
	require.EqualValues(t, 2, s.Counters.Claimed, "a nacked message was redelivered")

	dls := deadLetters(t, h, topic, backend.DefaultGroup, 0, 10)
	require.Len(t, dls, 1)
	require.Equal(t, far.UUID, dls[0].Envelope.UUID)
	require.Contains(t, dls[0].Reason, pubsub.MetadataNackDelayMs)
	require.Contains(t, dls[0].Reason, "MaxDelay")
}
