package adaptertest

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// WatermillOptions adapt the Watermill run to a backend. The zero value runs the defaults.
type WatermillOptions struct {
	// Subscriber, if set, adjusts the subscribers' config (see Watermill) before its Group is
	// set.
	Subscriber func(*pubsub.SubscriberConfig)
	// NoGroup names the group of a subscriber Watermill makes without one; nil gives them all
	// backend.DefaultGroup.
	NoGroup func() string
}

// Watermill runs Watermill's own Pub/Sub suite (see conformance.RunWatermill) with features on
// a backend of build's on a server of its own, which TestReconnect restarts (the data survives
// in the AOF); it sets features.RestartServiceCommand.
//
// Nacks are retried without a limit (Watermill expects a nacked message back, however often
// it fails) after a short backoff, so TestResendOnError and TestContinueAfterErrors stay
// quick; a short CloseTimeout keeps TestMessageCtx, which closes with a message never acked,
// quick too.
func Watermill(t *testing.T, build Build, features tests.Features, opts WatermillOptions) {
	server := redistest.Start(t, redistest.Options{AOF: true})
	h, err := build(server.Client(t), redistest.Prefix(t), conformance.Options{})
	require.NoError(t, err)
	closeBackend(t, h.Backend)
	features.RestartServiceCommand = server.RestartCommand(t)
	pubSub, groupPubSub := constructors(h.Backend, opts)
	conformance.RunWatermill(t, features, pubSub, groupPubSub)
}

// constructors build Watermill's publisher and subscriber pairs on b.
func constructors(b backend.Backend, opts WatermillOptions) (tests.PubSubConstructor, tests.ConsumerGroupPubSubConstructor) {
	logger := watermill.NopLogger{}
	withGroup := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, logger)
		require.NoError(t, err)
		cfg := pubsub.SubscriberConfig{
			Lease:         5 * time.Second,
			MaxDeliveries: -1,
			NackBackoff:   pubsub.ExponentialBackoff(10*time.Millisecond, 100*time.Millisecond),
			Block:         100 * time.Millisecond,
			CloseTimeout:  time.Second,
			RetryMax:      500 * time.Millisecond,
		}
		if opts.Subscriber != nil {
			opts.Subscriber(&cfg)
		}
		cfg.Group = group
		sub, err := pubsub.NewSubscriber(b, cfg, logger)
		require.NoError(t, err)
		// Watermill closes what it opens, except where a test fails midway.
		t.Cleanup(func() {
			_ = sub.Close()
			_ = pub.Close()
		})
		return pub, sub
	}
	noGroup := func(t *testing.T) (message.Publisher, message.Subscriber) {
		group := ""
		if opts.NoGroup != nil {
			group = opts.NoGroup()
		}
		return withGroup(t, group)
	}
	return noGroup, withGroup
}
