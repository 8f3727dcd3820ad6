package pubsub

import (
	"context"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// Subscriber consumes Watermill messages of one consumer group through a Backend. It
// implements message.Subscriber and message.SubscribeInitializer and is safe for concurrent
// use. Each Subscribe call is an independent subscription with its own prefetch buffer,
// Concurrency handlers in flight, heartbeat and reclaim loop.
type Subscriber struct {
	backend Backend
	config  SubscriberConfig
	logger  watermill.LoggerAdapter

	mu      sync.Mutex
	closed  bool
	closing chan struct{} // closed by Close: every subscription stops
	wg      sync.WaitGroup

	eviction sync.Once // warnEviction, at the first group registration
}

var (
	_ message.Subscriber           = (*Subscriber)(nil)
	_ message.SubscribeInitializer = (*Subscriber)(nil)
)

// NewSubscriber returns a Subscriber over backend. config goes through WithDefaults; an
// invalid value fails with a *ConfigError naming the field. A nil logger discards logs.
func NewSubscriber(backend Backend, config SubscriberConfig, logger watermill.LoggerAdapter) (*Subscriber, error) {
	if backend == nil {
		return nil, &ConfigError{Field: "backend", Reason: "must not be nil"}
	}
	config = config.WithDefaults()
	if err := config.validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	logger = logger.With(watermill.LogFields{"backend": backend.Name(), "group": config.Group, "consumer": config.Consumer})
	return &Subscriber{backend: backend, config: config, logger: logger, closing: make(chan struct{})}, nil
}

// Subscribe registers the subscriber's group on topic (waiting, with backoff, while Redis is
// unreachable) and returns an unbuffered channel of its messages. Every message must be
// acked or nacked; the subscription holds at most Concurrency of them unacknowledged.
//
// The channel is closed when ctx is cancelled or the Subscriber is closed; message contexts
// derive from ctx and are cancelled then too, and the handlers still running get
// CloseTimeout to ack or nack (see Close).
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if err := ValidateName("topic", topic); err != nil {
		return nil, err
	}
	if err := s.ensureGroup(ctx, topic); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	sub := newSubscription(ctx, s, topic)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sub.run()
	}()
	return sub.out, nil
}

// SubscribeInitialize registers the subscriber's group on topic, so that it receives every
// message published from now on, before any Subscribe. It waits while Redis is unreachable,
// until the Subscriber is closed.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	if s.isClosed() {
		return ErrClosed
	}
	if err := ValidateName("topic", topic); err != nil {
		return err
	}
	return s.ensureGroup(context.Background(), topic)
}

// Close stops every subscription: it stops claiming, releases prefetched messages back to
// ready at once (not counted as an attempt), cancels the contexts of messages in flight and
// waits up to CloseTimeout for their handlers to ack or nack, flushes acks, and closes the
// output channels. It is safe while nobody reads an output channel, idempotent, and returns
// once every subscription has finished. Later Subscribe calls fail with ErrClosed.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Subscriber) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// ensureGroup runs EnsureGroup until it succeeds, retrying Redis failures with capped
// backoff; it gives up on a permanent error, ctx cancellation or Close.
func (s *Subscriber) ensureGroup(ctx context.Context, topic string) error {
	r := newRetrier("registering group on topic "+topic, s.config, s.logger)
	p := &EnsureGroupParams{Topic: topic, Group: s.config.Group, FromOldest: s.config.FromOldest}
	for {
		err := s.backend.EnsureGroup(ctx, p)
		if err == nil {
			r.ok()
			s.eviction.Do(func() { s.warnEviction(ctx) })
			return nil
		}
		if permanent(err) {
			return err
		}
		wait := r.failed(err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return ErrClosed
		case <-time.After(wait):
		}
	}
}
