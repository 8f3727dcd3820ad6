package streams_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// TestPubSub runs Watermill's own Pub/Sub suite (see conformance.RunWatermill) on a server
// of its own, which TestReconnect restarts (the data survives in the AOF).
//
// The features are the streams backend's honest answers. Order: one subscriber handling one
// message at a time gets messages in publish order, but a nacked message comes back after
// its backoff while later ones go ahead, and several subscribers interleave; so order is
// guaranteed only with a single subscriber. New subscribers receive old messages: the stream
// keeps them, and the subscribers here start their groups from the oldest entry (FromOldest).
// A subscriber made without a group gets a group of its own, as watermill-redisstream's own
// tests do, so each one receives every message.
func TestPubSub(t *testing.T) {
	server := redistest.Start(t, redistest.Options{AOF: true})
	b, err := streams.New(server.Client(t), streams.Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	pubSub, groupPubSub := constructors(b)
	conformance.RunWatermill(t, tests.Features{
		ConsumerGroups:                      true,
		ExactlyOnceDelivery:                 false,
		GuaranteedOrder:                     false,
		GuaranteedOrderWithSingleSubscriber: true,
		Persistent:                          true,
		NewSubscriberReceivesOldMessages:    true,
		RestartServiceCommand:               server.RestartCommand(t),
	}, pubSub, groupPubSub)
}

// constructors build Watermill's publisher and subscriber pairs on b. Nacks are retried
// without a limit (Watermill expects a nacked message back, however often it fails) after a
// short backoff, so TestResendOnError and TestContinueAfterErrors stay quick. A short
// CloseTimeout keeps quick the tests that close with a message never acked: TestMessageCtx,
// and TestConcurrentSubscribe, whose 50 subscribers (a group each) all still hold a message
// when the test has read every one and closes them, one after the other.
func constructors(b *streams.Backend) (tests.PubSubConstructor, tests.ConsumerGroupPubSubConstructor) {
	logger := watermill.NopLogger{}
	withGroup := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, logger)
		require.NoError(t, err)
		sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{
			Group:         group,
			FromOldest:    true,
			Lease:         5 * time.Second,
			MaxDeliveries: -1,
			NackBackoff:   pubsub.ExponentialBackoff(10*time.Millisecond, 100*time.Millisecond),
			Block:         100 * time.Millisecond,
			CloseTimeout:  200 * time.Millisecond,
			RetryMax:      500 * time.Millisecond,
		}, logger)
		require.NoError(t, err)
		// Watermill closes what it opens, except where a test fails midway.
		t.Cleanup(func() {
			_ = sub.Close()
			_ = pub.Close()
		})
		return pub, sub
	}
	return func(t *testing.T) (message.Publisher, message.Subscriber) {
		return withGroup(t, "sub_"+watermill.NewShortUUID())
	}, withGroup
}
