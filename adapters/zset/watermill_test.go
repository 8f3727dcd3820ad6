package zset_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// TestPubSub runs Watermill's own Pub/Sub suite (see conformance.RunWatermill) on a server
// of its own, which TestReconnect restarts (the data survives in the AOF).
//
// The features are the zset backend's honest answers, the list backend's too. Order: one
// subscriber handling one message at a time gets messages in publish order (same priority,
// no delays), but a Nack re-scores its message to a later due time while later messages go
// ahead, and several subscribers interleave; so order is guaranteed only with a single
// subscriber. A new group starts with the next publish, so a new subscriber does not receive
// old messages.
func TestPubSub(t *testing.T) {
	server := redistest.Start(t, redistest.Options{AOF: true})
	b, err := zset.New(server.Client(t), zset.Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	pubSub, groupPubSub := constructors(b)
	conformance.RunWatermill(t, tests.Features{
		ConsumerGroups:                      true,
		ExactlyOnceDelivery:                 false,
		GuaranteedOrder:                     false,
		GuaranteedOrderWithSingleSubscriber: true,
		Persistent:                          true,
		NewSubscriberReceivesOldMessages:    false,
		RestartServiceCommand:               server.RestartCommand(t),
	}, pubSub, groupPubSub)
}

// constructors build Watermill's publisher and subscriber pairs on b. Nacks are retried
// without a limit (Watermill expects a nacked message back, however often it fails) after a
// short backoff, so TestResendOnError and TestContinueAfterErrors stay quick; a short
// CloseTimeout keeps TestMessageCtx, which closes with a message never acked, quick too.
func constructors(b *zset.Backend) (tests.PubSubConstructor, tests.ConsumerGroupPubSubConstructor) {
	logger := watermill.NopLogger{}
	withGroup := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, logger)
		require.NoError(t, err)
		sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{
			Group:         group,
			Lease:         5 * time.Second,
			MaxDeliveries: -1,
			NackBackoff:   pubsub.ExponentialBackoff(10*time.Millisecond, 100*time.Millisecond),
			Block:         100 * time.Millisecond,
			CloseTimeout:  time.Second,
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
	return func(t *testing.T) (message.Publisher, message.Subscriber) { return withGroup(t, "") }, withGroup
}
