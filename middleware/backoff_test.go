package middleware_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	wm "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/middleware"
	"github.com/relq/relq/pubsub"
)

var errDeclined = errors.New("card declined")

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	c := middleware.BackoffConfig{Initial: 100 * time.Millisecond, Max: time.Second, Jitter: -1}
	want := []time.Duration{100, 100, 200, 400, 800, 1000, 1000}
	for attempt, w := range want {
		require.Equal(t, w*time.Millisecond, c.Delay(attempt), "attempt %d", attempt)
	}
	require.Equal(t, time.Second, c.Delay(1<<30), "a huge attempt is capped, not overflowed")

	// Jitter only shortens, by at most its fraction; with Multiplier 2 and Jitter 0.2 the
	// delays never shrink from one attempt to the next.
	c.Jitter = 0.2
	prevMax := time.Duration(0)
	for attempt := 1; attempt <= 6; attempt++ {
		base := want[attempt]
		for range 200 {
			d := c.Delay(attempt)
			require.LessOrEqual(t, d, base*time.Millisecond)
			require.GreaterOrEqual(t, d, base*time.Millisecond*8/10)
			if base < 1000 {
				require.GreaterOrEqual(t, d, prevMax, "attempt %d shorter than attempt %d could be", attempt, attempt-1)
			}
		}
		prevMax = base * time.Millisecond
	}

	def := middleware.BackoffConfig{}.WithDefaults()
	require.Equal(t, middleware.BackoffConfig{Initial: time.Second, Multiplier: 2, Max: 5 * time.Minute, Jitter: 0.2}, def)
}

func TestRetryErrorMessage(t *testing.T) {
	t.Parallel()
	err := errors.New("card declined")
	due := time.Date(2026, 12, 3, 7, 30, 1, 250_000_000, time.Local)
	re := &middleware.RetryError{Err: err, Attempt: 2, Delay: 200 * time.Millisecond, Due: due}
	require.Equal(t, "card declined (relq: attempt 2, redelivery in 200ms, due at 07:30:01.250)", re.Error())
	final := &middleware.RetryError{Err: err, Attempt: 3, Final: true}
	require.Equal(t, "card declined (relq: final attempt 3)", final.Error())
}

func TestBackoffConfigErrors(t *testing.T) {
	t.Parallel()
	for field, c := range map[string]middleware.BackoffConfig{
		"BackoffConfig.Initial":    {Initial: time.Microsecond},
		"BackoffConfig.Multiplier": {Multiplier: 0.5},
		"BackoffConfig.Max":        {Initial: time.Second, Max: time.Millisecond},
		"BackoffConfig.Jitter":     {Jitter: 1.5},
	} {
		mw, err := middleware.Backoff(c)
		require.Nil(t, mw)
		require.ErrorIs(t, err, pubsub.ErrInvalidConfig, field)
		var ce *pubsub.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, field, ce.Field)
	}
	_, err := middleware.Backoff(middleware.BackoffConfig{Max: pubsub.MaxDelay + time.Millisecond})
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)
	require.ErrorContains(t, err, "MaxDelay")
	_, err = middleware.Backoff(middleware.BackoffConfig{Max: pubsub.MaxDelay})
	require.NoError(t, err)
}

// delivery is one handler call as a test sees it.
type delivery struct {
	attempt   int
	payload   string
	start     time.Time
	end       time.Time
	nackDelay string // the delay Backoff set, as the subscriber will read it
	err       error  // what the router got
}

// A message that always fails is redelivered after growing delays, each no sooner than
// Backoff said, and lands in the dead-letter store after MaxDeliveries, with no delivery
// after that.
func TestBackoffRedeliversThenDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sub := e.subscriber(pubsub.SubscriberConfig{MaxDeliveries: 4})
	backoff, err := middleware.Backoff(middleware.BackoffConfig{Initial: 50 * time.Millisecond, Max: time.Second, Jitter: -1})
	require.NoError(t, err)

	var got calls[delivery]
	var starts calls[time.Time]
	r := newRouter(t, observe(func(msg *message.Message, err error) {
		got.add(delivery{attempt: pubsub.Attempt(msg), end: time.Now(),
			nackDelay: msg.Metadata.Get(pubsub.MetadataNackDelayMs), err: err})
	}), backoff)
	r.AddConsumerHandler("charge", "orders", sub, func(msg *message.Message) error {
		starts.add(time.Now())
		return errDeclined
	})
	start(t, r)
	e.publish("orders", newMessage("", "order-1"))

	var dead []backend.DeadLetter
	require.Eventually(t, func() bool {
		dead, err = e.backend.DeadLetters(context.Background(), &backend.DeadLettersParams{Topic: "orders", Group: pubsub.DefaultGroup})
		require.NoError(t, err)
		return len(dead) == 1
	}, waitFor, 5*time.Millisecond)
	require.Equal(t, 4, dead[0].Attempts)
	require.Equal(t, "order-1", string(dead[0].Envelope.Payload))
	require.Equal(t, "card declined", dead[0].Reason, "the handler's error, not only a count")
	st := e.settled("orders")
	require.EqualValues(t, 1, st.Dead)

	ds := got.get()
	require.Len(t, ds, 4, "no delivery after the dead letter")
	for i, s := range starts.get() {
		ds[i].start = s
	}
	for i, d := range ds {
		require.Equal(t, i+1, d.attempt)
		wantDelay := 50 << i // ms: 50, 100, 200, 400
		require.Equal(t, strconv.Itoa(wantDelay), d.nackDelay)
		var re *middleware.RetryError
		require.ErrorAs(t, d.err, &re)
		require.ErrorIs(t, d.err, errDeclined, "the handler's error stays visible")
		require.Equal(t, i+1, re.Attempt)
		require.Equal(t, i == 3, re.Final)
		require.Equal(t, i == 3, middleware.IsFinalAttempt(d.err))
		if i < 3 {
			// Due is the delay after the handler failed, and the log line says so.
			delay := time.Duration(wantDelay) * time.Millisecond
			require.False(t, re.Due.Before(d.start.Add(delay)), "attempt %d: due at %v", d.attempt, re.Due)
			require.False(t, re.Due.After(d.end.Add(delay)), "attempt %d: due at %v", d.attempt, re.Due)
			require.Contains(t, re.Error(), ", due at "+re.Due.Format("15:04:05.000")+")")
		} else {
			require.True(t, re.Due.IsZero(), "a final attempt has no redelivery")
		}
		if i > 0 {
			// Never before the delay set on the previous attempt. Redis keeps due times on
			// its own clock in whole milliseconds: allow 2ms.
			gap, prev := d.start.Sub(ds[i-1].end), time.Duration(50<<(i-1))*time.Millisecond
			require.GreaterOrEqual(t, gap, prev-2*time.Millisecond,
				"attempt %d came %v after attempt %d failed", d.attempt, gap, d.attempt-1)
		}
	}
}

// Watermill's Retry inside Backoff retries in the process first; only when a delivery has
// used up its in-process retries does Backoff nack it once, with a delay, for Redis to
// redeliver. A message that recovers within the in-process retries is acked at once.
func TestBackoffWithRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sub := e.subscriber(pubsub.SubscriberConfig{MaxDeliveries: 3})
	backoff, err := middleware.Backoff(middleware.BackoffConfig{Initial: 20 * time.Millisecond, Jitter: -1})
	require.NoError(t, err)
	retry := wm.Retry{MaxRetries: 2, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, Multiplier: 1}

	var got calls[delivery]
	r := newRouter(t, backoff, retry.Middleware)
	flaky := 0
	r.AddConsumerHandler("charge", "orders", sub, func(msg *message.Message) error {
		got.add(delivery{attempt: pubsub.Attempt(msg), payload: string(msg.Payload)})
		if string(msg.Payload) == "flaky" {
			if flaky++; flaky <= 2 {
				return errDeclined
			}
			return nil
		}
		return errDeclined
	})
	start(t, r)
	e.publish("orders", newMessage("", "flaky"), newMessage("", "broken"))

	st := e.settled("orders")
	require.EqualValues(t, 1, st.Dead, "broken ends in the dead-letter store")
	require.EqualValues(t, 1, st.Counters.Acked, "flaky recovered in the process")

	var flakyAttempts, brokenAttempts []int
	for _, d := range got.get() {
		if d.payload == "flaky" {
			flakyAttempts = append(flakyAttempts, d.attempt)
		} else {
			brokenAttempts = append(brokenAttempts, d.attempt)
		}
	}
	require.Equal(t, []int{1, 1, 1}, flakyAttempts, "three tries of one delivery")
	require.Equal(t, []int{1, 1, 1, 2, 2, 2, 3, 3, 3}, brokenAttempts, "three tries of each of three deliveries")
}

// PoisonQueueWithFilter(IsFinalAttempt) outside Backoff leaves the retries to Redis and
// takes the message only on its last delivery: it goes to the poison topic (and is acked)
// instead of the dead-letter store. The subscriber's MaxDeliveries is the only limit set:
// Backoff reads it from the message.
func TestBackoffWithPoisonQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sub := e.subscriber(pubsub.SubscriberConfig{MaxDeliveries: 3})
	backoff, err := middleware.Backoff(middleware.BackoffConfig{Initial: 20 * time.Millisecond, Jitter: -1})
	require.NoError(t, err)
	poison, err := wm.PoisonQueueWithFilter(e.pub, "poison", middleware.IsFinalAttempt)
	require.NoError(t, err)
	retry := wm.Retry{MaxRetries: 1, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, Multiplier: 1}

	var got calls[delivery]
	var poisoned calls[*message.Message]
	r := newRouter(t)
	r.AddConsumerHandler("charge", "orders", sub, func(msg *message.Message) error {
		got.add(delivery{attempt: pubsub.Attempt(msg)})
		return errDeclined
	}).AddMiddleware(poison, backoff, retry.Middleware)
	r.AddConsumerHandler("inspect", "poison", sub, func(msg *message.Message) error {
		poisoned.add(msg)
		return nil
	})
	start(t, r)
	e.publish("orders", newMessage("", "broken"))

	require.Eventually(t, func() bool { return poisoned.len() == 1 }, waitFor, 5*time.Millisecond)
	st := e.settled("orders")
	require.EqualValues(t, 0, st.Dead)
	require.EqualValues(t, 1, st.Counters.Acked, "PoisonQueue acks the message it took")

	p := poisoned.get()[0]
	require.Equal(t, "broken", string(p.Payload))
	require.Contains(t, p.Metadata.Get(wm.ReasonForPoisonedKey), "card declined")
	require.Contains(t, p.Metadata.Get(wm.ReasonForPoisonedKey), "(relq: final attempt 3)")
	require.Equal(t, "orders", p.Metadata.Get(wm.PoisonedTopicKey))
	require.Equal(t, 1, pubsub.Attempt(p), "the poison topic delivers it afresh")

	var attempts []int
	for _, d := range got.get() {
		attempts = append(attempts, d.attempt)
	}
	require.Equal(t, []int{1, 1, 2, 2, 3, 3}, attempts)
}

// The last attempt is the delivering subscriber's MaxDeliveries, carried by the message: a
// message that no relq Subscriber delivered, or one of a subscriber without a limit, has none.
func TestBackoffFinalAttemptNeedsTheSubscribersLimit(t *testing.T) {
	t.Parallel()
	backoff, err := middleware.Backoff(middleware.BackoffConfig{})
	require.NoError(t, err)
	failing := backoff(func(*message.Message) ([]*message.Message, error) { return nil, errDeclined })
	msg := newMessage("", "x")
	msg.Metadata.Set(pubsub.MetadataAttempt, "1000")
	_, err = failing(msg)
	require.ErrorIs(t, err, errDeclined)
	require.False(t, middleware.IsFinalAttempt(err), "no limit known")

	e := newEnv(t)
	sub := e.subscriber(pubsub.SubscriberConfig{MaxDeliveries: -1})
	ch, err := sub.Subscribe(context.Background(), "unlimited")
	require.NoError(t, err)
	e.publish("unlimited", newMessage("", "x"))
	var got *message.Message
	select {
	case got = <-ch:
	case <-time.After(waitFor):
		t.Fatal("not delivered")
	}
	got.Metadata.Set(pubsub.MetadataAttempt, "1000")
	_, err = failing(got)
	require.False(t, middleware.IsFinalAttempt(err), "MaxDeliveries -1: no attempt is the last")
	require.True(t, got.Ack())
}
