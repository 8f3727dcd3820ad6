package streams_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// boundedTotal is how many messages the bounded-memory tests publish and ack: 100,000, or
// 10,000 with -short.
func boundedTotal() int {
	if testing.Short() {
		return 10_000
	}
	return 100_000
}

const boundedBatch = 1000

// boundedRun publishes total messages in batches while one subscriber (32 handlers, a large
// prefetch) acks them, calling beforeBatch before each batch, and returns once every message
// was handled exactly once and the group is settled.
func boundedRun(t *testing.T, b *streams.Backend, topic string, total int, beforeBatch func(acked int64)) {
	t.Helper()
	ctx := context.Background()
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{
		Group: "workers", Concurrency: 32, Prefetch: 2000, Block: 100 * time.Millisecond,
	}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, sub.Close()) }()
	require.NoError(t, sub.SubscribeInitialize(topic))
	ch, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)

	var (
		mu    sync.Mutex
		seen  = make(map[string]int, total)
		acked atomic.Int64
	)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for msg := range ch {
				mu.Lock()
				seen[msg.UUID]++
				mu.Unlock()
				msg.Ack()
				acked.Add(1)
			}
		}()
	}

	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	start := time.Now()
	for i := 0; i < total; i += boundedBatch {
		beforeBatch(acked.Load())
		msgs := make([]*message.Message, boundedBatch)
		for j := range msgs {
			msgs[j] = message.NewMessage(strconv.Itoa(i+j), []byte("payload of message "+strconv.Itoa(i+j)))
		}
		require.NoError(t, pub.Publish(topic, msgs...))
	}
	published := time.Since(start)
	require.Eventually(t, func() bool {
		s, err := b.Stats(ctx, &backend.StatsParams{Topic: topic, Group: "workers"})
		return err == nil && s.Counters.Acked == int64(total) && s.Ready == 0 && s.Pending == 0 && s.Delayed == 0
	}, 5*time.Minute, 50*time.Millisecond)
	t.Logf("%d messages: published in %v, all acked after %v", total, published, time.Since(start))

	require.NoError(t, sub.Close())
	wg.Wait()
	require.Len(t, seen, total)
	for uuid, n := range seen {
		require.Equal(t, 1, n, "message %s handled %d times", uuid, n)
	}
}

// pelCount is the group's PEL size, parked retries included.
func pelCount(t *testing.T, c *redis.Client, stream string) int64 {
	t.Helper()
	p, err := c.XPending(context.Background(), stream, "workers").Result()
	require.NoError(t, err)
	return p.Count
}

// With delete-on-ack, a stream whose messages were all acknowledged is empty: 100,000
// messages through it leave no entry and nothing pending.
func TestBoundedMemoryDeleteOnAck(t *testing.T) {
	t.Parallel()
	server := redistest.Shared(t)
	c := server.Client(t)
	prefix := redistest.Prefix(t)
	b, err := streams.New(c, streams.Options{Prefix: prefix, Retention: streams.DeleteOnAck})
	require.NoError(t, err)
	stream := "{" + prefix + ":bounded}:stream"

	boundedRun(t, b, "bounded", boundedTotal(), func(int64) {})
	ctx := context.Background()
	require.Zero(t, c.XLen(ctx, stream).Val(), "acked entries left in the stream")
	require.Zero(t, pelCount(t, c, stream))
	mem, err := c.MemoryUsage(ctx, stream).Result()
	require.NoError(t, err)
	t.Logf("stream after %d messages: 0 entries, %d bytes", boundedTotal(), mem)
	require.Less(t, mem, int64(4096), "an empty stream with its group")
}

// With MaxLen, the stream is trimmed to its bound while the subscriber keeps up (the
// publisher waits whenever the backlog nears the bound, since trimming drops the oldest
// entries whether read or not): 100,000 messages leave about MaxLen entries, all acked.
func TestBoundedMemoryMaxLen(t *testing.T) {
	t.Parallel()
	const maxLen = 5000
	server := redistest.Shared(t)
	c := server.Client(t)
	prefix := redistest.Prefix(t)
	b, err := streams.New(c, streams.Options{Prefix: prefix, MaxLen: maxLen})
	require.NoError(t, err)
	stream := "{" + prefix + ":bounded}:stream"

	total := boundedTotal()
	published := int64(0)
	boundedRun(t, b, "bounded", total, func(acked int64) {
		deadline := time.Now().Add(time.Minute)
		for published-acked > maxLen-2*boundedBatch && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			acked = statsAcked(t, b)
		}
		published += boundedBatch
	})
	n := c.XLen(context.Background(), stream).Val()
	t.Logf("stream after %d messages: %d entries (MaxLen %d)", total, n, maxLen)
	require.GreaterOrEqual(t, n, int64(maxLen))
	require.Less(t, n, int64(maxLen+100), "XTRIM MAXLEN ~ leaves at most a node (100 entries) more")
	require.Zero(t, pelCount(t, c, stream))
}

func statsAcked(t *testing.T, b *streams.Backend) int64 {
	t.Helper()
	s, err := b.Stats(context.Background(), &backend.StatsParams{Topic: "bounded", Group: "workers"})
	require.NoError(t, err)
	return s.Counters.Acked
}
