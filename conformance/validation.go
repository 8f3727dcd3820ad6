package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testValidation(t *testing.T, f Factory) {
	run(t, f, "InvalidTopic", Options{}, validationTopic)
	run(t, f, "InvalidConfig", Options{}, validationConfig)
	run(t, f, "MessageTooLarge", Options{}, validationTooLarge)
	run(t, f, "NilMessage", Options{}, validationNil)
	run(t, f, "ReservedMetadata", Options{}, validationReserved)
	run(t, f, "PublishAfterClose", Options{}, validationClosed)
}

var invalidTopics = []string{"", "a{b}", "has space", "glob*", strings.Repeat("x", backend.MaxNameLength+1)}

func validationTopic(t *testing.T, h Harness) {
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	for _, topic := range invalidTopics {
		require.ErrorIs(t, pub.Publish(topic, newMessage("x")), backend.ErrInvalidName, "Publish to %q", topic)
		_, err := sub.Subscribe(context.Background(), topic)
		require.ErrorIs(t, err, backend.ErrInvalidName, "Subscribe to %q", topic)
		require.ErrorIs(t, sub.SubscribeInitialize(topic), backend.ErrInvalidName, "SubscribeInitialize %q", topic)
	}
}

// Invalid configuration is refused up front, with an error that names the field.
func validationConfig(t *testing.T, h Harness) {
	for _, c := range []struct {
		field string
		cfg   pubsub.SubscriberConfig
	}{
		{"Group", pubsub.SubscriberConfig{Group: "a:b"}},
		{"Group", pubsub.SubscriberConfig{Group: "has space"}},
		{"Group", pubsub.SubscriberConfig{Group: "x{y}"}},
		{"Consumer", pubsub.SubscriberConfig{Consumer: "a b"}},
		{"Concurrency", pubsub.SubscriberConfig{Concurrency: -1}},
		{"Lease", pubsub.SubscriberConfig{Lease: time.Millisecond}},
	} {
		sub, err := pubsub.NewSubscriber(h.Backend, subscriberConfig(c.cfg), logger)
		if err == nil {
			_ = sub.Close()
		}
		require.ErrorIs(t, err, backend.ErrInvalidConfig, "%+v", c.cfg)
		require.ErrorContains(t, err, c.field)
	}
	pub, err := pubsub.NewPublisher(h.Backend, pubsub.PublisherConfig{MaxMessageBytes: -1}, logger)
	if err == nil {
		_ = pub.Close()
	}
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
	require.ErrorContains(t, err, "MaxMessageBytes")
}

// An oversized message is refused before anything is stored, even the valid messages of its
// batch: a Publish stores all of its messages or none.
func validationTooLarge(t *testing.T, h Harness) {
	const limit = 1024
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	pub := newPublisher(t, h, pubsub.PublisherConfig{MaxMessageBytes: limit})
	big := message.NewMessage("big-one", make([]byte, 2*limit))

	err := pub.Publish(topic, newMessage("small"), big)
	require.ErrorIs(t, err, backend.ErrMessageTooLarge)
	var size *backend.SizeError
	require.True(t, errors.As(err, &size), "%T is no *backend.SizeError", err)
	require.Equal(t, big.UUID, size.UUID)
	require.Equal(t, limit, size.Limit)
	requireNothingStored(t, h, topic)

	publish(t, pub, topic, newMessage("small"))
	require.Equal(t, counts{Ready: 1}, countsOf(stats(t, h, topic, backend.DefaultGroup)))
}

func validationNil(t *testing.T, h Harness) {
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	require.ErrorIs(t, pub.Publish(topic, nil), backend.ErrNilMessage)
	require.ErrorIs(t, pub.Publish(topic, newMessage("ok"), nil), backend.ErrNilMessage)
	requireNothingStored(t, h, topic)
}

// Keys in relq's namespace that relq does not know are refused, to catch typos such as
// "_relq_delay" for "_relq_delay_ms".
func validationReserved(t *testing.T, h Harness) {
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msg := newMessage("x")
	msg.Metadata.Set("_relq_foo", "1")
	err := pub.Publish(topic, newMessage("ok"), msg)
	require.ErrorIs(t, err, backend.ErrReservedMetadata)
	require.ErrorContains(t, err, "_relq_foo")
	requireNothingStored(t, h, topic)
}

func validationClosed(t *testing.T, h Harness) {
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	pub, err := pubsub.NewPublisher(h.Backend, pubsub.PublisherConfig{}, logger)
	require.NoError(t, err)
	require.NoError(t, pub.Close())
	require.NoError(t, pub.Close(), "second Close")
	require.ErrorIs(t, pub.Publish(topic, newMessage("x")), backend.ErrClosed)
	requireNothingStored(t, h, topic)
}

// requireNothingStored checks the default group, which the test registered first (so that
// a publish goes to it rather than to the topic's backlog).
func requireNothingStored(t *testing.T, h Harness, topic string) {
	t.Helper()
	s := stats(t, h, topic, backend.DefaultGroup)
	require.Equal(t, counts{}, countsOf(s), "a refused Publish stored something")
	require.Zero(t, s.Counters.Published, "a refused Publish stored something")
}
