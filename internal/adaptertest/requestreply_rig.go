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
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// RequestReplyOptions configure a RequestReplyRig.
type RequestReplyOptions struct {
	// ReplyTopic names the reply topic of a request by its operation ID: one shared topic, or
	// one per request.
	ReplyTopic func(operationID string) string
	// Subscriber is the config every Subscriber of the rig starts from; the rig sets Group
	// (and Ephemeral on the reply subscribers).
	Subscriber pubsub.SubscriberConfig
	// Ephemeral makes each request's reply group ephemeral.
	Ephemeral bool
}

// RequestReplyRig is Watermill's components/requestreply on a relq backend, as an
// application wires it: a command handler on topic "commands" behind a router and a durable
// group, and for each request a Subscriber of its own, in a reply group of its own
// ("reply-<operation ID>"), which requestreply cancels once the reply came and the rig then
// closes. The handler replies with the number it was sent.
type RequestReplyRig struct {
	bus      *cqrs.CommandBus
	replies  *requestreply.PubSubBackend[int]
	finished atomic.Int64
	stop     func()
}

// rigCommand is a RequestReplyRig's command.
type rigCommand struct{ N int }

// NewRequestReplyRig starts the rig on b; it stops when t ends, or at Stop.
func NewRequestReplyRig(t testing.TB, b backend.Backend, opts RequestReplyOptions) *RequestReplyRig {
	const commands = "commands"
	logger := watermill.NopLogger{}
	r := &RequestReplyRig{}
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, logger)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, pub.Close()) })

	var open sync.Map // operation ID -> *pubsub.Subscriber
	timeout := time.Minute
	r.replies, err = requestreply.NewPubSubBackend(requestreply.PubSubBackendConfig{
		Publisher: pub,
		SubscriberConstructor: func(p requestreply.PubSubBackendSubscribeParams) (message.Subscriber, error) {
			cfg := opts.Subscriber
			cfg.Group, cfg.Ephemeral = "reply-"+string(p.OperationID), opts.Ephemeral
			sub, err := pubsub.NewSubscriber(b, cfg, logger)
			if err == nil {
				open.Store(p.OperationID, sub)
			}
			return sub, err
		},
		GenerateSubscribeTopic: func(p requestreply.PubSubBackendSubscribeParams) (string, error) {
			return opts.ReplyTopic(string(p.OperationID)), nil
		},
		GeneratePublishTopic: func(p requestreply.PubSubBackendPublishParams) (string, error) {
			return opts.ReplyTopic(string(p.OperationID)), nil
		},
		// requestreply cancels the subscription when the reply came; the application closes
		// the Subscriber it made.
		OnListenForReplyFinished: func(_ context.Context, p requestreply.PubSubBackendSubscribeParams) {
			if sub, ok := open.LoadAndDelete(p.OperationID); ok {
				_ = sub.(*pubsub.Subscriber).Close()
			}
			r.finished.Add(1)
		},
		ListenForReplyTimeout: &timeout,
		Logger:                logger,
	}, requestreply.BackendPubsubJSONMarshaler[int]{})
	require.NoError(t, err)

	marshaler := cqrs.JSONMarshaler{}
	r.bus, err = cqrs.NewCommandBusWithConfig(pub, cqrs.CommandBusConfig{
		GeneratePublishTopic: func(cqrs.CommandBusGeneratePublishTopicParams) (string, error) { return commands, nil },
		Marshaler:            marshaler,
		Logger:               logger,
	})
	require.NoError(t, err)
	cfg := opts.Subscriber
	cfg.Group = "handlers"
	handlers, err := pubsub.NewSubscriber(b, cfg, logger)
	require.NoError(t, err)
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: time.Minute}, logger)
	require.NoError(t, err)
	processor, err := cqrs.NewCommandProcessorWithConfig(router, cqrs.CommandProcessorConfig{
		GenerateSubscribeTopic: func(cqrs.CommandProcessorGenerateSubscribeTopicParams) (string, error) { return commands, nil },
		SubscriberConstructor: func(cqrs.CommandProcessorSubscriberConstructorParams) (message.Subscriber, error) {
			return handlers, nil
		},
		Marshaler: marshaler,
		Logger:    logger,
	})
	require.NoError(t, err)
	require.NoError(t, processor.AddHandlers(requestreply.NewCommandHandlerWithResult[rigCommand, int]("rig", r.replies,
		func(_ context.Context, c *rigCommand) (int, error) { return c.N, nil })))

	routerDone := make(chan error, 1)
	go func() { routerDone <- router.Run(context.Background()) }()
	r.stop = sync.OnceFunc(func() {
		require.NoError(t, router.Close())
		require.NoError(t, <-routerDone)
		require.NoError(t, handlers.Close())
	})
	t.Cleanup(r.stop)
	select {
	case <-router.Running():
	case err := <-routerDone:
		require.FailNow(t, "router stopped", "%v", err)
	}
	return r
}

// Send sends the command n and waits for its reply: the number the handler replied with, or
// the error of the send or of the reply.
func (r *RequestReplyRig) Send(ctx context.Context, n int) (int, error) {
	reply, err := requestreply.SendWithReply[int](ctx, r.bus, r.replies, &rigCommand{N: n})
	if err != nil {
		return 0, err
	}
	return reply.HandlerResult, reply.Error
}

// Finished counts the requests whose reply Subscriber was closed.
func (r *RequestReplyRig) Finished() int64 { return r.finished.Load() }

// Stop stops the handler's router and its Subscriber (once; the test's end does it too).
func (r *RequestReplyRig) Stop() { r.stop() }
