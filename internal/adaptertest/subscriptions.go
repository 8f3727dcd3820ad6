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
	// No read timeout, and a Block of a minute, keep every subscription in one blocking
	// command for the whole test: Redis times blocking commands out on its server tick, so
	// many idle subscriptions that started together run their claim scripts together at
	// every timeout, which this test is not about.
	client, prefix := namedClient(t, func(o *redis.Options) { o.ReadTimeout = -1 })
	h, err := build(client, prefix, conformance.Options{})
	require.NoError(t, err)
	pub, err := pubsub.NewPublisher(h.Backend, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	sub, err := pubsub.NewSubscriber(h.Backend, pubsub.SubscriberConfig{Block: time.Minute, Lease: time.Minute}, nil)
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
			require.FailNow(t, "not delivered", "topic %s", topicOf(i))
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
func closeBackend(t testing.TB, b pubsub.Backend) {
	if c, ok := b.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
}
