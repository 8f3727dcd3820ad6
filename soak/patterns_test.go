package soak

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/cqrs"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/pubsub"
)

// OrderPlaced has a handler; OrderShipped has none yet (a service that will handle it is not
// deployed), so every one of them lands in its topic's backlog.
type OrderPlaced struct{ ID int }
type OrderShipped struct{ ID int }

// runCQRS publishes n events of each type on Watermill's CQRS event bus, with an event
// processor handling OrderPlaced only, and waits until every OrderPlaced was handled.
func runCQRS(t *testing.T, b backend.Backend, n int, sample func(int)) {
	logger := watermill.NopLogger{}
	marshaler := cqrs.JSONMarshaler{}
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, logger)
	require.NoError(t, err)
	processor, err := cqrs.NewEventProcessorWithConfig(router, cqrs.EventProcessorConfig{
		GenerateSubscribeTopic: func(p cqrs.EventProcessorGenerateSubscribeTopicParams) (string, error) {
			return p.EventName, nil
		},
		SubscriberConstructor: func(p cqrs.EventProcessorSubscriberConstructorParams) (message.Subscriber, error) {
			return newSubscriber(t, b, pubsub.SubscriberConfig{Group: p.HandlerName}), nil
		},
		Marshaler: marshaler,
		Logger:    logger,
	})
	require.NoError(t, err)
	var handled atomic.Int64
	require.NoError(t, processor.AddHandlers(cqrs.NewEventHandler("billing",
		func(context.Context, *OrderPlaced) error {
			handled.Add(1)
			return nil
		})))
	bus, err := cqrs.NewEventBusWithConfig(newPublisher(t, b), cqrs.EventBusConfig{
		GeneratePublishTopic: func(p cqrs.GenerateEventPublishTopicParams) (string, error) {
			return p.EventName, nil
		},
		Marshaler: marshaler,
		Logger:    logger,
	})
	require.NoError(t, err)

	ctx := runRouter(t, router)

	warm := n / 5
	for i := 1; i <= n; i++ {
		require.NoError(t, bus.Publish(ctx, &OrderPlaced{ID: i}))
		require.NoError(t, bus.Publish(ctx, &OrderShipped{ID: i}))
		if i == warm || i == n {
			require.Eventually(t, func() bool { return handled.Load() >= int64(i) }, 30*time.Second, 5*time.Millisecond,
				"OrderPlaced handled %d of %d", handled.Load(), i)
			sample(i)
		}
	}
}

// runRequestReply sends n commands one after another with Watermill's request-reply, each
// waiting for its reply on the topic replyTopic names for its operation, through a
// Subscriber of its own in an ephemeral group of its own (adaptertest.RequestReplyRig).
func runRequestReply(t *testing.T, b backend.Backend, n int, sample func(int), replyTopic func(backend.Backend, string) string) {
	rig := adaptertest.NewRequestReplyRig(t, b, adaptertest.RequestReplyOptions{
		ReplyTopic: func(op string) string { return replyTopic(b, op) },
		Subscriber: subscriberConfig,
		Ephemeral:  true,
	})
	warm := n / 5
	for i := 1; i <= n; i++ {
		got, err := rig.Send(context.Background(), i)
		require.NoError(t, err, "request %d", i)
		require.Equal(t, i, got, "request %d got another's reply", i)
		if i == warm || i == n {
			sample(i)
		}
	}
}

// runRouter runs router until the test ends and returns a context that ends with it.
func runRouter(t *testing.T, router *message.Router) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = router.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	<-router.Running()
	return ctx
}
