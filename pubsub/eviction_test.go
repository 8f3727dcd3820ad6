package pubsub_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// lines is a logger whose lines tests may read while the Subscriber still logs
// (watermill.CaptureLoggerAdapter hands out its map unlocked).
type lines struct {
	mu  sync.Mutex
	got []watermill.CapturedMessage
}

func (l *lines) log(level watermill.LogLevel, msg string, err error, fields watermill.LogFields) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, watermill.CapturedMessage{Level: level, Msg: msg, Err: err, Fields: fields})
}

func (l *lines) Error(msg string, err error, f watermill.LogFields) {
	l.log(watermill.ErrorLogLevel, msg, err, f)
}
func (l *lines) Info(msg string, f watermill.LogFields)           { l.log(watermill.InfoLogLevel, msg, nil, f) }
func (l *lines) Debug(msg string, f watermill.LogFields)          { l.log(watermill.DebugLogLevel, msg, nil, f) }
func (l *lines) Trace(msg string, f watermill.LogFields)          { l.log(watermill.TraceLogLevel, msg, nil, f) }
func (l *lines) With(watermill.LogFields) watermill.LoggerAdapter { return l }

// find returns the lines of level whose message contains s.
func (l *lines) find(level watermill.LogLevel, s string) []watermill.CapturedMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []watermill.CapturedMessage
	for _, m := range l.got {
		if m.Level == level && strings.Contains(m.Msg, s) {
			out = append(out, m)
		}
	}
	return out
}

// evictionRead waits until the Subscriber's eviction check has read the policy.
func (l *lines) evictionRead(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return len(l.find(watermill.DebugLogLevel, "eviction policy read")) > 0 },
		waitFor, time.Millisecond, "the eviction check read no policy")
}

// A Subscriber logs an eviction policy that can delete queue keys at error level, once
// however many topics it subscribes to; a safe policy, or one it may not read (INFO refused
// by ACLs), logs no error and does not keep it from subscribing.
func TestSubscriberWarnsOfEviction(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{})
	admin := server.Client(t)
	ctx := context.Background()
	subscribe := func(t *testing.T, c redis.UniversalClient, topics ...string) []watermill.CapturedMessage {
		t.Helper()
		b, err := list.New(c, list.Options{Prefix: redistest.Prefix(t)})
		require.NoError(t, err)
		logger := &lines{}
		sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{}, logger)
		require.NoError(t, err)
		for _, topic := range topics {
			_, err := sub.Subscribe(ctx, topic)
			require.NoError(t, err)
		}
		logger.evictionRead(t)
		require.NoError(t, sub.Close())
		return logger.find(watermill.ErrorLogLevel, "evict")
	}

	// The default policy, noeviction, is safe: Redis refuses writes when full instead.
	require.Empty(t, subscribe(t, admin, "a"))

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	errs := subscribe(t, admin, "a", "b")
	require.Len(t, errs, 1, "one error per Subscriber, not per Subscribe")
	require.Equal(t, "allkeys-lru", errs[0].Fields["maxmemory_policy"])
	require.ErrorContains(t, errs[0].Err, "maxmemory-policy is allkeys-lru")
	require.ErrorContains(t, errs[0].Err, "set maxmemory-policy noeviction")

	// volatile-* evicts only keys with a TTL, which relq gives to no key holding a message.
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
	require.Empty(t, subscribe(t, admin, "a"))

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu").Err())
	user := redistest.User{Name: "noinfo", Password: "secret", Rules: []string{"~*", "+@all", "-info"}}
	server.AddUser(t, user)
	require.Empty(t, subscribe(t, server.ClientAs(t, user), "a"), "policy unknown: nothing to report")
}

// infoGate holds the eviction check's INFO (the one without a section; the version check
// asks for "server") until released, or until the caller's context ends; failures makes the
// first reads fail as a connection error would.
type infoGate struct {
	release  chan struct{}
	failures atomic.Int32
	reads    atomic.Int32 // the eviction check's INFO calls so far
	inside   atomic.Int32 // those held right now
}

func newInfoGate() *infoGate { return &infoGate{release: make(chan struct{})} }

func (g *infoGate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *infoGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (g *infoGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "info" || len(cmd.Args()) != 1 {
			return next(ctx, cmd)
		}
		g.reads.Add(1)
		if g.failures.Add(-1) >= 0 {
			err := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset")}
			cmd.SetErr(err)
			return err
		}
		g.inside.Add(1)
		defer g.inside.Add(-1)
		select {
		case <-g.release:
			return next(ctx, cmd)
		case <-ctx.Done():
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
	}
}

// evictingSubscriber returns a Subscriber on a Redis whose policy evicts queue keys, whose
// eviction check's reads go through gate.
func evictingSubscriber(t *testing.T, gate *infoGate) (*pubsub.Subscriber, *lines) {
	t.Helper()
	server := redistest.Start(t, redistest.Options{})
	c := server.Client(t)
	require.NoError(t, c.ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err())
	c.AddHook(gate)
	b, err := list.New(c, list.Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	logger := &lines{}
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{}, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	return sub, logger
}

// subscribeWithin subscribes and fails the test when Subscribe does not return within waitFor
// (from any goroutine: it reports with Errorf).
func subscribeWithin(t *testing.T, sub *pubsub.Subscriber, ctx context.Context, topic string) <-chan *message.Message {
	t.Helper()
	type result struct {
		out <-chan *message.Message
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := sub.Subscribe(ctx, topic)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Errorf("Subscribe(%q): %v", topic, r.err)
		}
		return r.out
	case <-time.After(waitFor):
		t.Errorf("Subscribe(%q) did not return within %v", topic, waitFor)
		return nil
	}
}

// The eviction check belongs to the Subscriber, not to the Subscribe that started it: that
// Subscribe returns without waiting for it, so do the concurrent ones, and the warning is
// logged after the first Subscribe's ctx ended.
func TestEvictionCheckOutlivesTheSubscribeThatStartedIt(t *testing.T) {
	t.Parallel()
	gate := newInfoGate()
	sub, logger := evictingSubscriber(t, gate)

	ctx, cancel := context.WithCancel(context.Background())
	first := subscribeWithin(t, sub, ctx, "a")
	require.NotNil(t, first)
	require.Eventually(t, func() bool { return gate.inside.Load() == 1 }, waitFor, time.Millisecond, "the check runs")
	cancel()
	requireClosed(t, first)

	var wg sync.WaitGroup
	for _, topic := range []string{"b", "c", "d"} {
		wg.Go(func() { subscribeWithin(t, sub, context.Background(), topic) })
	}
	wg.Wait() // with the check's INFO still held
	require.Empty(t, logger.find(watermill.ErrorLogLevel, "evict"))

	close(gate.release)
	require.Eventually(t, func() bool { return len(logger.find(watermill.ErrorLogLevel, "evict")) == 1 },
		waitFor, time.Millisecond, "the warning is logged")
	require.NoError(t, sub.Close())
	require.Len(t, logger.find(watermill.ErrorLogLevel, "evict"), 1, "one check per Subscriber")
	require.EqualValues(t, 1, gate.reads.Load())
}

// A read Redis did not answer is tried again, with backoff.
func TestEvictionCheckRetries(t *testing.T) {
	t.Parallel()
	gate := newInfoGate()
	gate.failures.Store(2)
	close(gate.release)
	sub, logger := evictingSubscriber(t, gate)

	_, err := sub.Subscribe(context.Background(), "a")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(logger.find(watermill.ErrorLogLevel, "evict")) == 1 },
		waitFor, time.Millisecond, "the warning is logged after two failed reads")
	require.EqualValues(t, 3, gate.reads.Load())
	require.Len(t, logger.find(watermill.DebugLogLevel, "trying again"), 2)
}

// Close ends a check that is still waiting for Redis, and returns once it has: nothing of it
// outlives the Subscriber (TestMain's goleak checks the rest).
func TestCloseEndsTheEvictionCheck(t *testing.T) {
	t.Parallel()
	gate := newInfoGate() // never released
	sub, logger := evictingSubscriber(t, gate)

	_, err := sub.Subscribe(context.Background(), "a")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return gate.inside.Load() == 1 }, waitFor, time.Millisecond, "the check runs")
	closed := make(chan struct{})
	go func() {
		_ = sub.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(waitFor):
		t.Fatalf("Close did not return within %v while the check's INFO was held", waitFor)
	}
	require.Zero(t, gate.inside.Load(), "the check's read ended with Close")
	require.EqualValues(t, 1, gate.reads.Load(), "and was not tried again")
	require.Empty(t, logger.find(watermill.InfoLogLevel, "eviction policy"), "a check ended by Close is no failure to report")
}
