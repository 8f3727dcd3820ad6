package pubsub

import (
	"context"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/partition"
)

// Subscriber consumes Watermill messages of one consumer group through a Backend. It
// implements message.Subscriber and message.SubscribeInitializer and is safe for concurrent
// use. Each Subscribe call is an independent subscription with its own prefetch buffer,
// Concurrency handlers in flight, heartbeat and reclaim loop.
type Subscriber struct {
	backend   backend.Backend
	ephemeral backend.Ephemeral // the backend's, with config.Ephemeral; nil for a durable group
	config    SubscriberConfig
	logger    watermill.LoggerAdapter

	mu      sync.Mutex
	closed  bool
	closing chan struct{} // closed by Close: every subscription stops
	wg      sync.WaitGroup
	// initialized holds the topics whose ephemeral group SubscribeInitialize joined under the
	// configured consumer name, until a Subscribe of the topic has joined and leaves that
	// membership, or Close does.
	initialized map[string]bool

	// alive ends when Close begins: it bounds the Subscriber's own work, which no caller's
	// context may end (the eviction check).
	alive context.Context
	dying context.CancelFunc
	// evictionChecked is set once the eviction check started (eviction.go).
	evictionChecked bool
}

var (
	_ message.Subscriber           = (*Subscriber)(nil)
	_ message.SubscribeInitializer = (*Subscriber)(nil)
)

// NewSubscriber returns a Subscriber over backend. config goes through WithDefaults; an
// invalid value fails with a *ConfigError naming the field, as does Ephemeral on a backend
// that does not implement Ephemeral. A nil logger discards logs.
func NewSubscriber(be backend.Backend, config SubscriberConfig, logger watermill.LoggerAdapter) (*Subscriber, error) {
	if be == nil {
		return nil, &backend.ConfigError{Field: "backend", Reason: "must not be nil"}
	}
	be = partition.Auto(be) // a topic created with partitions is served over them
	config = config.WithDefaults()
	if err := config.validate(); err != nil {
		return nil, err
	}
	var ephemeral backend.Ephemeral
	if config.Ephemeral {
		e, ok := be.(backend.Ephemeral)
		if !ok {
			return nil, &backend.ConfigError{Field: "Ephemeral", Reason: "the " + be.Name() + " backend does not keep ephemeral groups (backend.Ephemeral)"}
		}
		ephemeral = e
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	logger = logger.With(watermill.LogFields{"backend": be.Name(), "group": config.Group, "consumer": config.Consumer})
	s := &Subscriber{
		backend: be, ephemeral: ephemeral, config: config, logger: logger,
		closing: make(chan struct{}), initialized: map[string]bool{},
	}
	s.alive, s.dying = context.WithCancel(context.Background())
	return s, nil
}

// Subscribe registers the subscriber's group on topic (waiting, with backoff, while Redis is
// unreachable) and returns an unbuffered channel of its messages. Every message must be
// acked or nacked; the subscription holds at most Concurrency of them unacknowledged. With
// Ephemeral the subscription joins the group instead, as a member of its own.
//
// The channel is closed when ctx is cancelled, the Subscriber is closed, or the group is
// deleted (Admin.DeleteGroup or DeleteTopic: the subscription logs ErrGroupDeleted and stops
// as if cancelled). Message contexts derive from ctx and are cancelled then too, and the
// handlers still running get CloseTimeout to ack or nack (see Close).
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if s.isClosed() {
		return nil, backend.ErrClosed
	}
	if err := backend.ValidateName("topic", topic); err != nil {
		return nil, err
	}
	sub := newSubscription(ctx, s, topic)
	if err := s.register(ctx, topic, sub.config.Consumer); err != nil {
		sub.discard()
		return nil, err
	}
	handover, err := s.start(sub)
	if err != nil {
		s.leave(topic, sub.config.Consumer)
		sub.discard()
		return nil, err
	}
	if handover {
		s.leave(topic, s.config.Consumer) // SubscribeInitialize's membership: sub holds the group now
	}
	return sub.out, nil
}

// start runs sub unless the Subscriber closed meanwhile. handover reports an ephemeral
// membership of SubscribeInitialize on sub's topic, which the caller leaves.
func (s *Subscriber) start(sub *subscription) (handover bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, backend.ErrClosed
	}
	handover = s.initialized[sub.topic]
	delete(s.initialized, sub.topic)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sub.run()
	}()
	return handover, nil
}

// SubscribeInitialize registers the subscriber's group on topic, so that it receives every
// message published from now on, before any Subscribe. It waits while Redis is unreachable,
// until the Subscriber is closed. With Ephemeral it joins the group under the configured
// consumer name, for EphemeralTTL: the first Subscribe of the topic then takes over (its own
// membership holds the group) and leaves that one, as Close does.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	if s.isClosed() {
		return backend.ErrClosed
	}
	if err := backend.ValidateName("topic", topic); err != nil {
		return err
	}
	if err := s.register(context.Background(), topic, s.config.Consumer); err != nil {
		return err
	}
	if s.ephemeral == nil {
		return nil
	}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.initialized[topic] = true
	}
	s.mu.Unlock()
	if closed {
		s.leave(topic, s.config.Consumer)
		return backend.ErrClosed
	}
	return nil
}

// Close stops every subscription: it stops claiming (a claim blocked waiting for messages
// ends at once), releases prefetched messages back to ready at once (not counted as an
// attempt), cancels the contexts of messages in flight and waits up to CloseTimeout for their
// handlers to ack or nack, flushes acks, leaves the ephemeral group, and closes the output
// channels. It ends the eviction check if that still runs. It is safe while nobody reads an
// output channel, idempotent, and returns once every subscription has finished. Later
// Subscribe calls fail with ErrClosed.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
		s.dying()
	}
	initialized := s.initialized
	s.initialized = nil
	s.mu.Unlock()
	s.wg.Wait()
	for topic := range initialized {
		s.leave(topic, s.config.Consumer)
	}
	return nil
}

func (s *Subscriber) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
