package adaptertest

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// ManySubscriptionsCount is how many subscriptions ManySubscriptions holds on one client: ten
// times go-redis's default pool on a 2-CPU machine.
const ManySubscriptionsCount = 200

// ManySubscriptions holds ManySubscriptionsCount idle subscriptions of one Subscriber on a
// client with go-redis's default pool (10 connections per CPU), then publishes one message to
// each topic and receives it. Blocked claims must not take the client's connections: every
// subscription blocks at once, and no call ever waits for a pooled connection (PoolStats'
// WaitCount and Timeouts stay 0) while registering, blocking or delivering.
func ManySubscriptions(t *testing.T, build Build) {
	t.Parallel()
	// No read timeout, and a Block of ten minutes, keep every subscription in one blocking
	// command for the whole test: Redis times blocking commands out on its server tick, so
	// many idle subscriptions that started together run their claim scripts together at
	// every timeout, which this test is not about. (A Block of one minute was shorter than
	// the registration of 200 subscriptions on a loaded CI machine: the first claims timed
	// out while the last registered, and one whose reply came late left an orphan.)
	client, prefix := namedClient(t, func(o *redis.Options) { o.ReadTimeout = -1 })
	h, err := build(client, prefix, conformance.Options{})
	require.NoError(t, err)
	pub, err := pubsub.NewPublisher(h.Backend, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	// The subscriber's log is kept and shown when a message is not delivered: a claim that
	// failed between BLMOVE and its registration leaves an orphan until OrphanLease (Lease).
	log := watermill.NewCaptureLogger()
	sub, err := pubsub.NewSubscriber(h.Backend, pubsub.SubscriberConfig{Block: 10 * time.Minute, Lease: time.Minute}, log)
	require.NoError(t, err)
	t.Cleanup(func() {
		// Closing the backend first ends the blocked claims, so the Subscriber need not wait
		// for their Block.
		if c, ok := h.Backend.(io.Closer); ok {
			require.NoError(t, c.Close())
		}
		require.NoError(t, sub.Close())
	})

	noPoolWait := func(stage string) {
		t.Helper()
		s := client.PoolStats()
		require.Zero(t, s.WaitCount, "%s: calls waited for one of the client's %d connections", stage, client.Options().PoolSize)
		require.Zero(t, s.Timeouts, "%s: calls timed out waiting for one of the client's %d connections", stage, client.Options().PoolSize)
	}
	// One subscription at a time, each blocked in its claim before the next starts, so that
	// the claim, reclaim and registration every subscription runs as it starts do not all
	// come at once (200 of them would need more than 20 connections for a moment).
	subs := make([]<-chan *message.Message, ManySubscriptionsCount)
	for i := range subs {
		subs[i], err = sub.Subscribe(context.Background(), topicOf(i))
		require.NoError(t, err)
		noPoolWait(fmt.Sprintf("registering subscription %d", i+1))
		require.Eventually(t, func() bool {
			return Blocked(context.Background(), client, client.Options().ClientName, "") == i+1
		}, time.Minute, time.Millisecond, "subscription %d should block in its claim", i+1)
	}
	noPoolWait("blocking")

	for i, ch := range subs {
		require.NoError(t, pub.Publish(topicOf(i), message.NewMessage(watermill.NewUUID(), []byte(topicOf(i)))))
		select {
		case msg := <-ch:
			require.Equal(t, topicOf(i), string(msg.Payload))
			msg.Ack()
		case <-time.After(time.Minute):
			st, err := h.Backend.Stats(context.Background(), &backend.StatsParams{Topic: topicOf(i), Group: backend.DefaultGroup})
			require.FailNow(t, "not delivered", "topic %s; its group: %+v (%v); the subscriber's last errors: %v",
				topicOf(i), st, err, lastLogs(log.Captured()[watermill.ErrorLogLevel], 5))
		}
	}
	noPoolWait("delivering")
}

// BenchmarkPickup measures the pickup latency of one message (publish, delivery, ack) to one
// of ManySubscriptionsCount idle subscriptions of one Subscriber on a client with go-redis's
// default pool.
func BenchmarkPickup(b *testing.B, build Build) {
	client, prefix := namedClient(b, nil)
	h, err := build(client, prefix, conformance.Options{})
	require.NoError(b, err)
	closeBackend(b, h.Backend)
	pub, err := pubsub.NewPublisher(h.Backend, pubsub.PublisherConfig{}, nil)
	require.NoError(b, err)
	sub, err := pubsub.NewSubscriber(h.Backend, pubsub.SubscriberConfig{}, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = sub.Close() })
	subs := make([]<-chan *message.Message, ManySubscriptionsCount)
	for i := range subs {
		subs[i], err = sub.Subscribe(context.Background(), topicOf(i))
		require.NoError(b, err)
	}
	for i := 0; b.Loop(); i++ {
		n := i % len(subs)
		require.NoError(b, pub.Publish(topicOf(n), message.NewMessage(watermill.NewUUID(), nil)))
		(<-subs[n]).Ack()
	}
}

// lastLogs formats the last n of logs, each with its fields: the whole capture of a failing
// run is too long for the test's output.
func lastLogs(logs []watermill.CapturedMessage, n int) string {
	logs = logs[max(0, len(logs)-n):]
	out := ""
	for _, l := range logs {
		out += fmt.Sprintf("\n  %s %v err=%v", l.Msg, l.Fields, l.Err)
	}
	return out
}

func topicOf(i int) string { return fmt.Sprintf("topic-%03d", i) }

// namedClient returns a client of the shared server with go-redis's default pool, named after
// a key prefix of its own so that CLIENT LIST tells its connections (and its backend's)
// apart, with edit (if not nil) applied to its options.
func namedClient(t testing.TB, edit func(*redis.Options)) (*redis.Client, string) {
	t.Helper()
	prefix := redistest.Prefix(t)
	return NamedClient(t, prefix, edit), prefix
}

// closeBackend closes b, when it has a Close, after the test's other clean-ups.
func closeBackend(t testing.TB, b backend.Backend) {
	if c, ok := b.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
}

// stopBlock is the Block of StopEndsBlockedClaim's subscriptions, and stopSoon how long it
// gives a stop: far shorter than Block, and far longer than a stop takes.
const stopBlock, stopSoon = time.Minute, 10 * time.Second

// StopEndsBlockedClaim checks that a subscription blocked in its claim stops at once, not at
// the end of its Block, both when its ctx is cancelled and when its Subscriber closes: its
// output channel closes, its blocking command ends in Redis, and no pooled connection is left
// in use.
func StopEndsBlockedClaim(t *testing.T, build Build) {
	t.Parallel()
	// No read timeout, so that only Block bounds the blocking commands.
	client, prefix := namedClient(t, func(o *redis.Options) { o.ReadTimeout = -1 })
	h, err := build(client, prefix, conformance.Options{})
	require.NoError(t, err)
	closeBackend(t, h.Backend)
	sub, err := pubsub.NewSubscriber(h.Backend, pubsub.SubscriberConfig{Block: stopBlock, Lease: 2 * stopBlock}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sub.Close()) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled, err := sub.Subscribe(ctx, "cancelled")
	require.NoError(t, err)
	closed, err := sub.Subscribe(context.Background(), "closed")
	require.NoError(t, err)
	blocked := func(n int, what string) {
		t.Helper()
		require.Eventually(t, func() bool {
			return Blocked(context.Background(), client, client.Options().ClientName, "") == n
		}, stopSoon, time.Millisecond, what)
	}
	blocked(2, "both subscriptions should block in their claims")

	cancel()
	requireClosedBefore(t, cancelled, stopSoon, "cancelled")
	blocked(1, "the cancelled subscription's blocking command should end")

	stopped := make(chan error, 1)
	go func() { stopped <- sub.Close() }()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(stopSoon):
		require.FailNow(t, "Close waited for the blocked claim")
	}
	requireClosedBefore(t, closed, 0, "closed")
	blocked(0, "the closed subscription's blocking command should end")
	s := client.PoolStats()
	require.Equal(t, s.TotalConns, s.IdleConns, "pooled connections still in use with every subscription stopped")
}

// requireClosedBefore requires ch to close, with nothing delivered, within d (0: now).
func requireClosedBefore(t *testing.T, ch <-chan *message.Message, d time.Duration, name string) {
	t.Helper()
	timeout := make(<-chan time.Time)
	if d > 0 {
		timeout = time.After(d)
	}
	select {
	case msg, ok := <-ch:
		require.False(t, ok, "%s: delivered %v", name, msg)
	case <-timeout:
		require.FailNow(t, "not stopped", "%s: the output channel is still open after %v", name, d)
	}
}
