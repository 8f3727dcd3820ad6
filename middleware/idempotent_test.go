package middleware_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/middleware"
	"github.com/relq/relq/pubsub"
)

func idempotent(t *testing.T, c middleware.IdempotentConfig) message.HandlerMiddleware {
	t.Helper()
	mw, err := middleware.Idempotent(c)
	require.NoError(t, err)
	return mw
}

// marker returns the value and remaining TTL of a marker, "" when there is none.
func (e *env) marker(key string) (string, time.Duration) {
	e.t.Helper()
	v, err := e.client.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return "", 0
	}
	require.NoError(e.t, err)
	ttl, err := e.client.PTTL(context.Background(), key).Result()
	require.NoError(e.t, err)
	return v, ttl
}

// A message redelivered after its handler succeeded (here: the ack is lost on the first
// delivery, as when the process dies before the ack reaches Redis), or published again
// with the same UUID, is acked without running the handler again.
func TestIdempotentSkipsHandledMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := middleware.IdempotentConfig{Client: e.client, Prefix: e.prefix, DoneTTL: time.Hour}
	var lost sync.Once
	loseFirstAck := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			if err == nil {
				lost.Do(func() { err = errors.New("ack lost") })
			}
			return produced, err
		}
	}
	var skipped calls[int]
	var runs calls[string]
	r := newRouter(t, observe(func(msg *message.Message, err error) {
		if middleware.Skipped(msg) {
			skipped.add(pubsub.Attempt(msg))
		}
	}), loseFirstAck, idempotent(t, cfg))
	r.AddConsumerHandler("charge", "orders", e.subscriber(pubsub.SubscriberConfig{}), func(msg *message.Message) error {
		runs.add(string(msg.Payload))
		return nil
	})
	start(t, r)

	msg := newMessage("", "order-1")
	e.publish("orders", msg)
	st := e.settled("orders")
	require.EqualValues(t, 1, st.Counters.Acked)
	require.Equal(t, []string{"order-1"}, runs.get())
	require.Equal(t, []int{2}, skipped.get(), "the redelivery was skipped")

	v, ttl := e.marker(cfg.MarkerKey("charge", msg.UUID))
	require.True(t, strings.HasPrefix(v, "d:"), "marker %q", v)
	require.True(t, ttl > 0 && ttl <= time.Hour, "done marker TTL %v", ttl)

	e.publish("orders", newMessage(msg.UUID, "order-1 again"))
	require.Eventually(t, func() bool { return e.stats("orders", pubsub.DefaultGroup).Counters.Acked == 2 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []string{"order-1"}, runs.get(), "the duplicate publish did not run")
	require.Equal(t, []int{2, 1}, skipped.get())
}

// A failed run releases its marker, so the redelivery runs the handler.
func TestIdempotentFailedRunRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := middleware.IdempotentConfig{Client: e.client, Prefix: e.prefix}
	var runs calls[int]
	r := newRouter(t, idempotent(t, cfg))
	r.AddConsumerHandler("charge", "orders", e.subscriber(pubsub.SubscriberConfig{}), func(msg *message.Message) error {
		runs.add(pubsub.Attempt(msg))
		if pubsub.Attempt(msg) == 1 {
			return errDeclined
		}
		return nil
	})
	start(t, r)
	msg := newMessage("", "order-1")
	e.publish("orders", msg)
	st := e.settled("orders")
	require.EqualValues(t, 1, st.Counters.Acked)
	require.Equal(t, []int{1, 2}, runs.get())
	v, _ := e.marker(cfg.MarkerKey("charge", msg.UUID))
	require.True(t, strings.HasPrefix(v, "d:"), "marker %q", v)
}

// A run releases only its own marker: when its marker expired and another run took the key,
// its failure leaves the other run's marker alone. A panic releases the marker too.
func TestIdempotentReleasesOnlyItsOwnMarker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := middleware.IdempotentConfig{Client: e.client, Prefix: e.prefix}
	mw := idempotent(t, cfg)
	msg := newMessage("", "order-1")
	key := cfg.MarkerKey("", msg.UUID) // no router, no handler name

	_, err := mw(func(msg *message.Message) ([]*message.Message, error) {
		v, _ := e.marker(key)
		require.True(t, strings.HasPrefix(v, "p:"), "in progress while the handler runs: %q", v)
		require.NoError(t, e.client.Set(context.Background(), key, "p:another-run", time.Minute).Err())
		return nil, errDeclined
	})(msg)
	require.ErrorIs(t, err, errDeclined)
	v, _ := e.marker(key)
	require.Equal(t, "p:another-run", v)

	require.NoError(t, e.client.Del(context.Background(), key).Err())
	require.PanicsWithValue(t, "boom", func() {
		_, _ = mw(func(*message.Message) ([]*message.Message, error) { panic("boom") })(newMessage(msg.UUID, ""))
	})
	v, _ = e.marker(key)
	require.Empty(t, v, "a panicking run releases its marker")
}

// A run that crashed holding the marker blocks the message until the marker expires
// (InProgressTTL); then the message is handled once. The crashed run is simulated by the
// marker it leaves behind: an in-progress value that no live run will release.
func TestIdempotentCrashedRunExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const ttl = 300 * time.Millisecond
	cfg := middleware.IdempotentConfig{Client: e.client, Prefix: e.prefix, InProgressTTL: ttl}
	backoff, err := middleware.Backoff(middleware.BackoffConfig{Initial: 10 * time.Millisecond, Jitter: -1})
	require.NoError(t, err)
	var errs calls[error]
	type run struct {
		attempt int
		at      time.Time
	}
	var runs calls[run]
	r := newRouter(t, observe(func(_ *message.Message, err error) { errs.add(err) }), backoff, idempotent(t, cfg))
	r.AddConsumerHandler("charge", "orders", e.subscriber(pubsub.SubscriberConfig{}), func(msg *message.Message) error {
		runs.add(run{attempt: pubsub.Attempt(msg), at: time.Now()})
		return nil
	})
	start(t, r)

	msg := newMessage("", "order-1")
	crashedAt := time.Now()
	require.NoError(t, e.client.Set(context.Background(), cfg.MarkerKey("charge", msg.UUID), "p:crashed", ttl).Err())
	e.publish("orders", msg)
	st := e.settled("orders")
	require.EqualValues(t, 1, st.Counters.Acked)

	got := runs.get()
	require.Len(t, got, 1, "handled once")
	require.GreaterOrEqual(t, got[0].attempt, 2, "not on the delivery that found the marker")
	require.GreaterOrEqual(t, got[0].at.Sub(crashedAt), ttl-2*time.Millisecond, "not before the marker expired")

	first := errs.get()[0]
	require.ErrorIs(t, first, middleware.ErrInProgress)
	var ipe *middleware.InProgressError
	var re *middleware.RetryError
	require.ErrorAs(t, first, &ipe)
	require.ErrorAs(t, first, &re)
	require.LessOrEqual(t, ipe.Remaining, ttl)
	require.Equal(t, max(10*time.Millisecond, ipe.Remaining), re.Delay, "Backoff waits for the marker")
}

// Two deliveries of one message at the same time: one runs, the other finds the marker in
// progress and is nacked until the run is done, then acked without running.
func TestIdempotentConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := middleware.IdempotentConfig{Client: e.client, Prefix: e.prefix, InProgressTTL: 500 * time.Millisecond}
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	inProgress := make(chan struct{}, 10)

	var runs calls[string]
	r := newRouter(t, observe(func(_ *message.Message, err error) {
		if errors.Is(err, middleware.ErrInProgress) {
			inProgress <- struct{}{}
		}
	}), idempotent(t, cfg))
	r.AddConsumerHandler("charge", "orders", e.subscriber(pubsub.SubscriberConfig{Concurrency: 2}), func(msg *message.Message) error {
		runs.add(string(msg.Payload))
		<-release
		return nil
	})
	start(t, r)

	uuid := newMessage("", "").UUID
	e.publish("orders", newMessage(uuid, "copy-1"), newMessage(uuid, "copy-2"))
	select {
	case <-inProgress:
	case <-time.After(waitFor):
		t.Fatal("the second copy did not find the marker in progress")
	}
	unblock()
	st := e.settled("orders")
	require.EqualValues(t, 2, st.Counters.Acked)
	require.Len(t, runs.get(), 1, "handled once: %v", runs.get())
}

// Key replaces the UUID as the idempotency key; a key error fails the delivery without
// running the handler.
func TestIdempotentKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	byOrder := func(msg *message.Message) (string, error) {
		if id := msg.Metadata.Get("order_id"); id != "" {
			return id, nil
		}
		return "", errors.New("no order_id")
	}
	cfg := middleware.IdempotentConfig{Client: e.client, Prefix: e.prefix, Key: byOrder}
	var runs calls[string]
	r := newRouter(t, idempotent(t, cfg))
	r.AddConsumerHandler("charge", "orders", e.subscriber(pubsub.SubscriberConfig{}), func(msg *message.Message) error {
		runs.add(string(msg.Payload))
		return nil
	})
	start(t, r)
	a, b := newMessage("", "first"), newMessage("", "second")
	a.Metadata.Set("order_id", "42")
	b.Metadata.Set("order_id", "42")
	e.publish("orders", a, b)
	require.Eventually(t, func() bool { return e.stats("orders", pubsub.DefaultGroup).Counters.Acked == 2 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []string{"first"}, runs.get())

	_, err := idempotent(t, cfg)(func(*message.Message) ([]*message.Message, error) {
		t.Error("the handler ran without a key")
		return nil, nil
	})(newMessage("", "no key"))
	require.ErrorContains(t, err, "no order_id")
}

func TestIdempotentKeyHelpers(t *testing.T) {
	t.Parallel()
	msg := newMessage("u-1", "")
	k, err := middleware.UUIDKey(msg)
	require.NoError(t, err)
	require.Equal(t, "u-1", k)
	_, err = middleware.UUIDKey(newMessage("", ""))
	require.NoError(t, err, "newMessage gives a UUID")
	_, err = middleware.UUIDKey(message.NewMessage("", nil))
	require.Error(t, err)

	_, err = middleware.DeliveryKey(msg)
	require.Error(t, err, "not from a relq subscriber")
	msg.Metadata.Set(pubsub.MetadataTopic, "orders")
	msg.Metadata.Set(pubsub.MetadataDeliveryID, "17")
	k, err = middleware.DeliveryKey(msg)
	require.NoError(t, err)
	require.Equal(t, "orders:17", k)

	c := middleware.IdempotentConfig{}
	require.Equal(t, "{relq:idem:charge:u-1}", c.MarkerKey("charge", "u-1"))
	require.NotEqual(t, c.MarkerKey("a:b", "c"), c.MarkerKey("a", "b:c"), "handler names cannot shift into keys")
}

func TestIdempotentConfigErrors(t *testing.T) {
	t.Parallel()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	for field, c := range map[string]middleware.IdempotentConfig{
		"IdempotentConfig.Client":        {},
		"IdempotentConfig.Prefix":        {Client: client, Prefix: "a:b"},
		"IdempotentConfig.InProgressTTL": {Client: client, InProgressTTL: -time.Second},
		"IdempotentConfig.DoneTTL":       {Client: client, DoneTTL: time.Microsecond},
	} {
		mw, err := middleware.Idempotent(c)
		require.Nil(t, mw)
		require.ErrorIs(t, err, pubsub.ErrInvalidConfig, field)
		var ce *pubsub.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, field, ce.Field)
	}
}

// failFirstPublish fails its first Publish, as a Redis hiccup would.
type failFirstPublish struct {
	message.Publisher
	once sync.Once
}

func (p *failFirstPublish) Publish(topic string, msgs ...*message.Message) error {
	failed := false
	p.once.Do(func() { failed = true })
	if failed {
		return errors.New("publish failed")
	}
	return p.Publisher.Publish(topic, msgs...)
}

// A handler that returns messages is marked done only after the router published them: a
// failed publish nacks the message and the retry runs the handler again, so its output is
// not lost; a duplicate after that is skipped and publishes nothing.
func TestIdempotentProducedMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := middleware.IdempotentConfig{Client: e.client, Prefix: e.prefix, InProgressTTL: 500 * time.Millisecond}
	var runs calls[int]
	r := newRouter(t, idempotent(t, cfg))
	out := &failFirstPublish{Publisher: e.pub}
	// A group on the output topic counts what reaches it (without one it would wait in the backlog).
	require.NoError(t, e.backend.EnsureGroup(context.Background(), &backend.EnsureGroupParams{Topic: "enriched", Group: pubsub.DefaultGroup}))
	r.AddHandler("enrich", "orders", e.subscriber(pubsub.SubscriberConfig{}), "enriched", out,
		func(msg *message.Message) ([]*message.Message, error) {
			runs.add(pubsub.Attempt(msg))
			return []*message.Message{newMessage("", "enriched "+string(msg.Payload))}, nil
		})
	start(t, r)

	msg := newMessage("", "order-1")
	e.publish("orders", msg)
	e.settled("orders")
	require.Len(t, runs.get(), 2, "the run whose output was lost, and the retry")
	require.EqualValues(t, 1, e.stats("enriched", pubsub.DefaultGroup).Counters.Published)
	key := cfg.MarkerKey("enrich", msg.UUID)
	require.Eventually(t, func() bool {
		v, _ := e.marker(key)
		return strings.HasPrefix(v, "d:")
	}, waitFor, 5*time.Millisecond, "done once acked")

	e.publish("orders", newMessage(msg.UUID, "order-1"))
	require.Eventually(t, func() bool { return e.stats("orders", pubsub.DefaultGroup).Counters.Acked == 2 }, waitFor, 5*time.Millisecond)
	require.Len(t, runs.get(), 2)
	require.EqualValues(t, 1, e.stats("enriched", pubsub.DefaultGroup).Counters.Published)
}
