package pubsub

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/partition"
)

// ErrNotReplicated reports a publish that Redis stored but that fewer replicas than
// PublisherConfig.WaitReplicas acknowledged within WaitTimeout. The messages are stored on the
// primary and will be delivered unless it fails over; publishing them again is safe
// (at-least-once) but may deliver them twice.
var ErrNotReplicated = errors.New("relq: not acknowledged by enough replicas")

// Publisher publishes Watermill messages through a Backend. It implements message.Publisher
// and is safe for concurrent use.
//
// Concurrent Publish calls on one topic share round trips (a group commit, see commit.go):
// while one Backend.Publish call of a topic is in flight, later calls queue their messages,
// and one of them sends everything queued in the next call. Each Publish still returns only
// once its own messages are stored, with its own error.
type Publisher struct {
	backend backend.Backend
	waiter  backend.ReplicaWaiter
	config  PublisherConfig
	logger  watermill.LoggerAdapter

	// Bounds of one coalesced Backend.Publish call: commitMaxMessages and commitMaxBytes,
	// lowered by tests.
	maxMessages, maxBytes int

	drops *dropLog // backlog drops, logged once per topic per minute

	mu     sync.Mutex
	closed bool
	topics map[string]*topicQueue // topics with a flush in flight or calls queued
	calls  sync.WaitGroup         // Publish calls accepted and not yet returned: Close waits
	sends  sync.WaitGroup         // flushes on their way to Redis: Close waits for them too
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher over backend. A nil logger discards logs. It fails with a
// *ConfigError for an invalid config, or when WaitReplicas is set and the backend does not
// implement ReplicaWaiter.
func NewPublisher(be backend.Backend, config PublisherConfig, logger watermill.LoggerAdapter) (*Publisher, error) {
	if be == nil {
		return nil, &backend.ConfigError{Field: "backend", Reason: "must not be nil"}
	}
	be = partition.Auto(be) // a topic created with partitions is served over them
	config = config.WithDefaults()
	if err := config.validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	p := &Publisher{
		backend: be, config: config, logger: logger,
		maxMessages: commitMaxMessages, maxBytes: commitMaxBytes,
		topics: map[string]*topicQueue{},
		drops:  newDropLog(logger),
	}
	if config.WaitReplicas > 0 {
		w, ok := be.(backend.ReplicaWaiter)
		if !ok {
			return nil, &backend.ConfigError{Field: "WaitReplicas", Reason: fmt.Sprintf("is set but the %s backend cannot wait for replicas", be.Name())}
		}
		p.waiter = w
	}
	return p, nil
}

// Publish stores msgs on topic and returns nil only once Redis has stored every one (and,
// with WaitReplicas, once enough replicas acknowledged them). The messages of one call are
// stored in one round trip, contiguous and in order. Every message is checked first: one
// invalid message (nil, bad relq metadata, too large) fails the whole call with a typed error
// and nothing stored, without affecting other calls.
//
// The context of the first message bounds the call, as Watermill passes contexts through
// messages. If it ends while the messages wait behind another call's round trip, they are
// not sent and Publish returns the context's error. If it ends while they are on their way
// to Redis, Publish returns the context's error at once, and the messages may be stored all
// the same (at-least-once: publishing them again may store them twice).
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	if p.isClosed() {
		return backend.ErrClosed
	}
	if err := backend.ValidateName("topic", topic); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	now := time.Now()
	c := &publishCall{
		msgs: make([]backend.OutMessage, len(msgs)),
		done: make(chan struct{}),
	}
	for i, msg := range msgs {
		if msg == nil {
			return fmt.Errorf("%w: message %d of %d", backend.ErrNilMessage, i+1, len(msgs))
		}
		var key string
		if p.config.Key != nil {
			key = p.config.Key(topic, msg)
		}
		m, size, err := outMessage(msg, p.config.MaxMessageBytes, now, key)
		if err != nil {
			return err
		}
		c.msgs[i] = m
		c.bytes += size
	}
	c.ctx = msgs[0].Context()
	leads, err := p.enqueue(topic, c)
	if err != nil {
		return err
	}
	defer p.calls.Done()
	if leads {
		p.flush(topic, c)
	}
	return p.await(topic, c)
}

// Close makes later Publish calls fail with ErrClosed and waits for the calls already
// accepted: their messages, queued or in flight, are still sent and each call gets its
// outcome. The backend's Redis client belongs to the caller and stays open. Close starts no
// goroutine and leaves none behind. It is idempotent.
func (p *Publisher) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.calls.Wait()
	p.sends.Wait()
	p.drops.close()
	return nil
}

func (p *Publisher) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}
