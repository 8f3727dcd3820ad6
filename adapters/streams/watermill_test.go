package streams_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/pubsub"
)

// TestPubSub runs Watermill's own Pub/Sub suite (see adaptertest.Watermill) on a server of its
// own, which TestReconnect restarts (the data survives in the AOF).
//
// The features are the streams backend's honest answers. Order: one subscriber handling one
// message at a time gets messages in publish order, but a nacked message comes back after
// its backoff while later ones go ahead, and several subscribers interleave; so order is
// guaranteed only with a single subscriber. New subscribers receive old messages: the stream
// keeps them, and the subscribers here start their groups from the oldest entry (FromOldest).
// A subscriber made without a group gets a group of its own, as watermill-redisstream's own
// tests do, so each one receives every message.
//
// A shorter CloseTimeout than the default run's keeps quick the tests that close with a
// message never acked: TestMessageCtx, and TestConcurrentSubscribe, whose 50 subscribers (a
// group each) all still hold a message when the test has read every one and closes them, one
// after the other.
func TestPubSub(t *testing.T) {
	adaptertest.Watermill(t, buildFormat(streams.FormatNative), tests.Features{
		ConsumerGroups:                      true,
		ExactlyOnceDelivery:                 false,
		GuaranteedOrder:                     false,
		GuaranteedOrderWithSingleSubscriber: true,
		Persistent:                          true,
		NewSubscriberReceivesOldMessages:    true,
	}, adaptertest.WatermillOptions{
		Subscriber: func(cfg *pubsub.SubscriberConfig) {
			cfg.FromOldest = true
			cfg.CloseTimeout = 200 * time.Millisecond
		},
		NoGroup: func() string { return "sub_" + watermill.NewShortUUID() },
	})
}
