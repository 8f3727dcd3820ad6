package conformance

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testRoundTrip(t *testing.T, f Factory) {
	run(t, f, "MessageArrivesIntact", Options{}, roundTripIntact)
	run(t, f, "PublishBeforeAnyGroupWaitsForTheFirst", Options{}, roundTripBeforeAnyGroup)
	run(t, f, "RepeatedUUIDsAreDistinctDeliveries", Options{}, roundTripRepeatedUUID)
	run(t, f, "ReceivedMessageCanBeForwarded", Options{}, roundTripForward)
	run(t, f, "DeliveryIDsUniqueAndMonotonic", Options{}, roundTripDeliveryIDs)
}

// The UUID, the user's metadata and a binary payload survive; the delivery metadata says
// which delivery this is.
func roundTripIntact(t *testing.T, h Harness) {
	topic, group := topicName(), "workers"
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Group: group})
	ch := subscribe(t, sub, topic)

	payload := make([]byte, 256)
	for i := range payload {
		payload[i] = byte(i)
	}
	msg := message.NewMessage(watermill.NewUUID(), payload)
	msg.Metadata.Set("trace-id", "abc-123")
	msg.Metadata.Set("empty", "")
	msg.Metadata.Set("unicode", "zażółć ✓")
	sent := maps.Clone(msg.Metadata)
	publish(t, pub, topic, msg)

	got := receive(t, ch)
	require.Equal(t, msg.UUID, got.UUID)
	require.Equal(t, payload, []byte(got.Payload))
	for k, v := range sent {
		gv, ok := got.Metadata[k]
		require.True(t, ok, "metadata key %q lost", k)
		require.Equal(t, v, gv, "metadata key %q", k)
	}
	for k := range got.Metadata {
		if _, ok := sent[k]; !ok {
			require.True(t, strings.HasPrefix(k, pubsub.ReservedPrefix), "unexpected metadata key %q", k)
		}
	}
	require.NotEmpty(t, pubsub.DeliveryID(got))
	require.Equal(t, 1, pubsub.Attempt(got))
	require.Equal(t, topic, got.Metadata.Get(pubsub.MetadataTopic))
	require.Equal(t, group, got.Metadata.Get(pubsub.MetadataGroup))
	require.True(t, got.Ack())

	s := requireSettled(t, h, topic, group, 0)
	require.Equal(t, backend.Counters{Published: 1, Claimed: 1, Acked: 1}, s.Counters)
}

// A message published to a topic nobody subscribed to yet waits in the topic's backlog, and
// the first group that subscribes, whatever its name, receives it; no group is registered
// for it meanwhile.
func roundTripBeforeAnyGroup(t *testing.T, h Harness) {
	topic, group := topicName(), "latecomer"
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msg := newMessage("early")
	publish(t, pub, topic, msg)
	groups, err := h.Backend.GroupNames(context.Background(), topic)
	require.NoError(t, err)
	require.Empty(t, groups, "a publish registered a group")

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Group: group})
	got := receive(t, subscribe(t, sub, topic))
	require.Equal(t, msg.UUID, got.UUID)
	require.Equal(t, group, got.Metadata.Get(pubsub.MetadataGroup))
	require.True(t, got.Ack())
	requireSettled(t, h, topic, group, 0)
}

// The Watermill UUID is the user's and may repeat; each publish is still its own delivery,
// and acking one never removes the other.
func roundTripRepeatedUUID(t *testing.T, h Harness) {
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 2})
	ch := subscribe(t, sub, topic)

	a := newMessage("a")
	b := message.NewMessage(a.UUID, []byte("b"))
	publish(t, pub, topic, a, b)

	first, second := receive(t, ch), receive(t, ch)
	require.Equal(t, a.UUID, first.UUID)
	require.Equal(t, a.UUID, second.UUID)
	require.ElementsMatch(t, []string{"a", "b"}, []string{string(first.Payload), string(second.Payload)})
	require.NotEqual(t, pubsub.DeliveryID(first), pubsub.DeliveryID(second))

	require.True(t, first.Ack())
	s := requireCounts(t, h, topic, backend.DefaultGroup, counts{Pending: 1})
	require.Equal(t, int64(1), s.Counters.Acked)
	require.True(t, second.Ack())
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// A received message carries relq's delivery metadata; publishing it elsewhere (a common
// Watermill pattern) works, and the copy gets delivery metadata of its own.
func roundTripForward(t *testing.T, h Harness) {
	from, to := topicName(), topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	chFrom := subscribe(t, sub, from)
	chTo := subscribe(t, sub, to)

	msg := newMessage("forward me")
	msg.Metadata.Set("k", "v")
	publish(t, pub, from, msg)
	got := receive(t, chFrom)
	require.NoError(t, pub.Publish(to, got), "publishing a received message")
	require.True(t, got.Ack())

	fwd := receive(t, chTo)
	require.Equal(t, msg.UUID, fwd.UUID)
	require.Equal(t, "forward me", string(fwd.Payload))
	require.Equal(t, "v", fwd.Metadata.Get("k"))
	require.Equal(t, to, fwd.Metadata.Get(pubsub.MetadataTopic))
	require.Equal(t, 1, pubsub.Attempt(fwd))
	require.True(t, fwd.Ack())
	requireSettled(t, h, from, backend.DefaultGroup, 0)
	requireSettled(t, h, to, backend.DefaultGroup, 0)
}

// Delivery IDs never repeat within a topic and grow with each publish; Claim returns the
// IDs Publish returned.
func roundTripDeliveryIDs(t *testing.T, h Harness) {
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	ids := append(publishDirectInOrder(t, h, topic, 5), publishDirectInOrder(t, h, topic, 3)...)
	for i := 1; i < len(ids); i++ {
		require.True(t, idLess(ids[i-1], ids[i]), "delivery IDs not increasing: %q then %q (all: %q)", ids[i-1], ids[i], ids)
	}

	ds := claimN(t, h, topic, backend.DefaultGroup, "c1", len(ids), shortLease)
	claimed := make([]string, len(ds))
	for i, d := range ds {
		require.NoError(t, d.Err)
		require.Equal(t, 1, d.Attempt)
		claimed[i] = d.ID
	}
	require.ElementsMatch(t, ids, claimed)

	res, err := h.Backend.Ack(context.Background(), &backend.AckParams{
		Topic: topic, Group: backend.DefaultGroup, Consumer: "c1", Items: held(ds...),
	})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Acked: len(ids)}, res)
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}
