package middleware_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// The middleware is tested the way it is used: real Watermill routers over a relq
// Publisher and Subscriber on the list backend, against the shared test Redis, each test
// under a key prefix of its own.

func TestMain(m *testing.M) { redistest.Main(m) }

const waitFor = 10 * time.Second

type env struct {
	t       *testing.T
	client  *redis.Client
	prefix  string
	backend backend.Backend
	pub     *pubsub.Publisher
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	b, err := list.New(c, list.Options{Prefix: prefix})
	require.NoError(t, err)
	p, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return &env{t: t, client: c, prefix: prefix, backend: b, pub: p}
}

// subscriber returns a subscriber with short timings, so that retries come quickly: Block
// bounds how late a delayed message arrives on the list backend.
func (e *env) subscriber(c pubsub.SubscriberConfig) *pubsub.Subscriber {
	e.t.Helper()
	if c.Block == 0 {
		c.Block = 50 * time.Millisecond
	}
	if c.Lease == 0 {
		c.Lease = 2 * time.Second
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = 2 * time.Second
	}
	if c.NackBackoff == nil {
		c.NackBackoff = func(int) time.Duration { return 10 * time.Millisecond }
	}
	s, err := pubsub.NewSubscriber(e.backend, c, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// newRouter returns a router with mws added in order (the first outermost).
func newRouter(t *testing.T, mws ...message.HandlerMiddleware) *message.Router {
	t.Helper()
	r, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, watermill.NopLogger{})
	require.NoError(t, err)
	r.AddMiddleware(mws...)
	return r
}

// start runs r until the test ends, once every handler subscribed.
func start(t *testing.T, r *message.Router) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		require.NoError(t, <-done)
	})
	select {
	case <-r.Running():
	case err := <-done:
		t.Fatalf("router stopped at start: %v", err)
	case <-time.After(waitFor):
		t.Fatal("router not running")
	}
}

func (e *env) publish(topic string, msgs ...*message.Message) {
	e.t.Helper()
	require.NoError(e.t, e.pub.Publish(topic, msgs...))
}

func (e *env) stats(topic, group string) backend.Stats {
	e.t.Helper()
	st, err := e.backend.Stats(context.Background(), &backend.StatsParams{Topic: topic, Group: group})
	require.NoError(e.t, err)
	return st
}

// settled waits until topic's default group holds nothing (ready, delayed or pending), and
// returns its stats.
func (e *env) settled(topic string) backend.Stats {
	e.t.Helper()
	var st backend.Stats
	require.Eventually(e.t, func() bool {
		st = e.stats(topic, pubsub.DefaultGroup)
		return st.Ready == 0 && st.Delayed == 0 && st.Pending == 0 && st.Counters.Published > 0
	}, waitFor, 5*time.Millisecond, "topic %s not settled", topic)
	return st
}

// calls records handler calls, safe for concurrent handlers.
type calls[T any] struct {
	mu   sync.Mutex
	list []T
}

func (c *calls[T]) add(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, v)
}

func (c *calls[T]) get() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.list...)
}

func (c *calls[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.list)
}

// observe returns middleware that calls f with each message and the error the middleware
// inside it returned, as the router will see it.
func observe(f func(msg *message.Message, err error)) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			f(msg, err)
			return produced, err
		}
	}
}

func newMessage(uuid, payload string) *message.Message {
	if uuid == "" {
		uuid = watermill.NewUUID()
	}
	return message.NewMessage(uuid, []byte(payload))
}
