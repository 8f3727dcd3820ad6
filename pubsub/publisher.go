package pubsub

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// ErrNotReplicated reports a publish that Redis stored but that fewer replicas than
// PublisherConfig.WaitReplicas acknowledged within WaitTimeout. The messages are stored on the
// primary and will be delivered unless it fails over; publishing them again is safe
// (at-least-once) but may deliver them twice.
var ErrNotReplicated = errors.New("relq: not acknowledged by enough replicas")

// ReplicaWaiter is implemented by backends that can wait for replication (Redis WAIT). It is
// an optional interface, not part of Backend, because WAIT is meaningful only on a primary
// with replicas; PublisherConfig.WaitReplicas requires it.
//
// WAIT counts replicas that acknowledged the writes of the connection it runs on, so an
// implementation must make the count cover the publish that preceded the call: for example
// by pipelining a write to one of the topic's keys with WAIT on one connection (replication
// is ordered, so a replica that acknowledged the later write has the publish too). The topic
// says which node to ask on Redis Cluster. It returns how many replicas acknowledged.
type ReplicaWaiter interface {
	WaitReplicas(ctx context.Context, topic string, replicas int, timeout time.Duration) (int, error)
}

// Publisher publishes Watermill messages through a Backend. It implements message.Publisher
// and is safe for concurrent use.
type Publisher struct {
	backend Backend
	waiter  ReplicaWaiter
	config  PublisherConfig
	logger  watermill.LoggerAdapter
	closed  atomic.Bool
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher over backend. A nil logger discards logs. It fails with a
// *ConfigError for an invalid config, or when WaitReplicas is set and the backend does not
// implement ReplicaWaiter.
func NewPublisher(backend Backend, config PublisherConfig, logger watermill.LoggerAdapter) (*Publisher, error) {
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
	p := &Publisher{backend: backend, config: config, logger: logger}
	if config.WaitReplicas > 0 {
		w, ok := backend.(ReplicaWaiter)
		if !ok {
			return nil, &ConfigError{Field: "WaitReplicas", Reason: fmt.Sprintf("is set but the %s backend cannot wait for replicas", backend.Name())}
		}
		p.waiter = w
	}
	return p, nil
}

// Publish stores msgs on topic in one round trip and returns nil only once Redis has stored
// every one (and, with WaitReplicas, once enough replicas acknowledged them). Every message is
// checked first: one invalid message (nil, bad relq metadata, too large) fails the whole batch
// with a typed error and nothing stored. The context of the first message bounds the call,
// as Watermill passes contexts through messages.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if err := ValidateName("topic", topic); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	now := time.Now()
	out := make([]OutMessage, len(msgs))
	for i, msg := range msgs {
		if msg == nil {
			return fmt.Errorf("%w: message %d of %d", ErrNilMessage, i+1, len(msgs))
		}
		m, err := outMessage(msg, p.config.MaxMessageBytes, now)
		if err != nil {
			return err
		}
		out[i] = m
	}
	ctx := msgs[0].Context()
	if _, err := p.backend.Publish(ctx, &PublishParams{Topic: topic, Messages: out}); err != nil {
		return fmt.Errorf("relq: publish %d message(s) to %q: %w", len(msgs), topic, err)
	}
	p.logger.Trace("relq: published", watermill.LogFields{"topic": topic, "count": len(msgs)})
	if p.waiter != nil {
		n, err := p.waiter.WaitReplicas(ctx, topic, p.config.WaitReplicas, p.config.WaitTimeout)
		if err != nil {
			return fmt.Errorf("relq: wait for %d replica(s) after publishing to %q: %w", p.config.WaitReplicas, topic, err)
		}
		if n < p.config.WaitReplicas {
			return fmt.Errorf("%w: %d of %d replica(s) within %s", ErrNotReplicated, n, p.config.WaitReplicas, p.config.WaitTimeout)
		}
	}
	return nil
}

// Close makes later Publish calls fail with ErrClosed. Publish is synchronous, so there is
// nothing to flush; the backend's Redis client belongs to the caller and stays open.
// Close is idempotent.
func (p *Publisher) Close() error {
	p.closed.Store(true)
	return nil
}
