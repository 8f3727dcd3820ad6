package adaptertest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/cqrs"
	"github.com/ThreeDotsLabs/watermill/components/requestreply"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// RequestReplyRounds is how many sequential round trips RequestReply makes.
const RequestReplyRounds = 200

// ping is RequestReply's command.
type ping struct{ N int }

// RequestReply makes RequestReplyRounds sequential round trips with Watermill's
// components/requestreply on a client with go-redis's default pool (10 connections per CPU):
// a command handler behind a relq Subscriber, and for each request a relq Subscriber of its
// own, in a group of its own on one shared reply topic (ephemeral where the backend keeps
// ephemeral groups, durable otherwise), which requestreply cancels once the reply came and
// which is closed then. No call may wait for a pooled connection (PoolStats' WaitCount and
// Timeouts stay 0): a subscription that stops must give its connections back at once, not
// keep a blocked claim until Block. Once everything is closed no pooled connection is in use,
// and ephemeral reply groups are all gone.
func RequestReply(t *testing.T, build Build) {
	t.Parallel()
	client, prefix := namedClient(t, nil)
	h, err := build(client, prefix, conformance.Options{})
	require.NoError(t, err)
	closeBackend(t, h.Backend)
	_, ephemeral := h.Backend.(pubsub.Ephemeral)
	const commands, replies = "commands", "replies"

	pub, err := pubsub.NewPublisher(h.Backend, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, pub.Close()) })

	// The requester's side: a Subscriber per request, closed when requestreply is done with it.
	var (
		open     sync.Map // operation ID -> *pubsub.Subscriber
		finished atomic.Int64
	)
	rr, err := requestreply.NewPubSubBackend[requestreply.NoResult](requestreply.PubSubBackendConfig{
		Publisher: pub,
		SubscriberConstructor: func(p requestreply.PubSubBackendSubscribeParams) (message.Subscriber, error) {
			sub, err := pubsub.NewSubscriber(h.Backend, pubsub.SubscriberConfig{
				Group: "reply-" + string(p.OperationID), Ephemeral: ephemeral,
			}, nil)
			if err == nil {
				open.Store(p.OperationID, sub)
			}
			return sub, err
		},
		GenerateSubscribeTopic: func(requestreply.PubSubBackendSubscribeParams) (string, error) { return replies, nil },
		GeneratePublishTopic:   func(requestreply.PubSubBackendPublishParams) (string, error) { return replies, nil },
		OnListenForReplyFinished: func(_ context.Context, p requestreply.PubSubBackendSubscribeParams) {
			if sub, ok := open.LoadAndDelete(p.OperationID); ok {
				_ = sub.(*pubsub.Subscriber).Close()
			}
			finished.Add(1)
		},
	}, requestreply.BackendPubsubJSONMarshaler[requestreply.NoResult]{})
	require.NoError(t, err)

	// The handler's side: one router.
	marshaler := cqrs.JSONMarshaler{}
	bus, err := cqrs.NewCommandBusWithConfig(pub, cqrs.CommandBusConfig{
		GeneratePublishTopic: func(cqrs.CommandBusGeneratePublishTopicParams) (string, error) { return commands, nil },
		Marshaler:            marshaler,
	})
	require.NoError(t, err)
	handlers, err := pubsub.NewSubscriber(h.Backend, pubsub.SubscriberConfig{Group: "handlers"}, nil)
	require.NoError(t, err)
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: time.Minute}, watermill.NopLogger{})
	require.NoError(t, err)
	processor, err := cqrs.NewCommandProcessorWithConfig(router, cqrs.CommandProcessorConfig{
		GenerateSubscribeTopic: func(cqrs.CommandProcessorGenerateSubscribeTopicParams) (string, error) { return commands, nil },
		SubscriberConstructor: func(cqrs.CommandProcessorSubscriberConstructorParams) (message.Subscriber, error) {
			return handlers, nil
		},
		Marshaler: marshaler,
	})
	require.NoError(t, err)
	require.NoError(t, processor.AddHandlers(requestreply.NewCommandHandler("ping", rr,
		func(context.Context, *ping) error { return nil })))
	routerDone := make(chan error, 1)
	go func() { routerDone <- router.Run(context.Background()) }()
	stopRouter := sync.OnceFunc(func() {
		require.NoError(t, router.Close())
		require.NoError(t, <-routerDone)
		require.NoError(t, handlers.Close())
	})
	t.Cleanup(stopRouter)
	select {
	case <-router.Running():
	case err := <-routerDone:
		require.FailNow(t, "router stopped", "%v", err)
	}

	start := time.Now()
	for i := range RequestReplyRounds {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		reply, err := requestreply.SendWithReply[requestreply.NoResult](ctx, bus, rr, &ping{N: i})
		cancel()
		require.NoError(t, err, "request %d", i+1)
		require.NoError(t, reply.Error, "request %d", i+1)
	}
	took := time.Since(start)
	t.Logf("%s: %d request-reply round trips in %v (%v each), ephemeral reply groups: %v",
		h.Backend.Name(), RequestReplyRounds, took.Round(time.Millisecond), (took / RequestReplyRounds).Round(time.Microsecond), ephemeral)

	s := client.PoolStats()
	t.Logf("pool: size %d, hits %d, misses %d, total %d, idle %d", client.Options().PoolSize, s.Hits, s.Misses, s.TotalConns, s.IdleConns)
	require.Zero(t, s.WaitCount, "calls waited for one of the client's %d pooled connections", client.Options().PoolSize)
	require.Zero(t, s.Timeouts, "calls timed out waiting for one of the client's %d pooled connections", client.Options().PoolSize)

	require.Eventually(t, func() bool { return finished.Load() == RequestReplyRounds }, time.Minute, time.Millisecond,
		"every reply subscriber closed")
	stopRouter()
	s = client.PoolStats()
	require.Equal(t, s.TotalConns, s.IdleConns, "pooled connections still in use with every subscriber closed")
	if ephemeral {
		groups, err := h.Backend.Groups(context.Background(), replies)
		require.NoError(t, err)
		require.Empty(t, groups, "ephemeral reply groups left behind")
	}
}
