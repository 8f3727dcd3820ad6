package soak

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// backlogLimit bounds the backlog of the event type no handler subscribes to. The default
// (backend.BacklogLimitDefault) would take 10,000 events to reach; the soak wants the bound
// reached within its warm-up, so it sets a small one, as an operator would for such topics.
const backlogLimit = 100

// streamMaxLen bounds the streams backend's streams: Streams keeps its history until trimmed
// by design (a new group may replay it), so a command topic or a shared reply topic is bounded
// with MaxLen, as docs/operations.md advises; the bound is reached within the warm-up of the
// short run (200 requests).
const streamMaxLen = 50

// soakBackend is one backend the soak runs on.
type soakBackend struct {
	name string
	open func(client redis.UniversalClient) (backend.Backend, error)
}

var backends = []soakBackend{
	{"list", func(c redis.UniversalClient) (backend.Backend, error) {
		return list.New(c, list.Options{BacklogLimit: backlogLimit})
	}},
	{"zset", func(c redis.UniversalClient) (backend.Backend, error) {
		return zset.New(c, zset.Options{BacklogLimit: backlogLimit})
	}},
	{"streams", func(c redis.UniversalClient) (backend.Backend, error) {
		return streams.New(c, streams.Options{BacklogLimit: backlogLimit, MaxLen: streamMaxLen})
	}},
}

// pattern is one way Watermill applications use relq that must not grow Redis.
type pattern struct {
	name string
	// run makes n requests (or events) through the pattern on b, calling sample after the
	// warm-up and at the end.
	run func(t *testing.T, b backend.Backend, n int, sample func(at int))
}

var patterns = []pattern{
	{"cqrs-unhandled-event", runCQRS},
	{"requestreply-shared-topic", func(t *testing.T, b backend.Backend, n int, sample func(int)) {
		runRequestReply(t, b, n, sample, func(backend.Backend, string) string { return "replies" })
	}},
	{"requestreply-topic-per-request", func(t *testing.T, b backend.Backend, n int, sample func(int)) {
		runRequestReply(t, b, n, sample, func(_ backend.Backend, op string) string { return "reply-" + op })
	}},
}

// TestMemoryIsFlat runs every pattern on every backend, each on a Redis of its own, and
// asserts that after the warm-up (a fifth of the requests) neither the key count nor
// used_memory grows with the requests that follow.
func TestMemoryIsFlat(t *testing.T) {
	for _, p := range patterns {
		for _, be := range backends {
			t.Run(p.name+"/"+be.name, func(t *testing.T) {
				t.Parallel()
				// Small stream nodes, so that MaxLen's approximate trim (whole nodes) keeps a
				// stream within 10 entries of streamMaxLen rather than within 100.
				server := redistest.Start(t, redistest.Options{Args: []string{"--stream-node-max-entries", "10"}})
				client := server.Client(t)
				b, err := be.open(client)
				require.NoError(t, err)
				t.Cleanup(func() { closeBackend(b) })

				warm := requests / 5
				var first, last snapshot
				var sampling time.Duration // left out of took: settle waits for Redis, not for requests
				start := time.Now()
				p.run(t, b, requests, func(at int) {
					began := time.Now()
					defer func() { sampling += time.Since(began) }()
					s := settle(t, client)
					if at == warm {
						first = s
					} else {
						last = s
					}
				})
				row := result{pattern: p.name, backend: be.name, requests: requests, warm: first, end: last,
					took: time.Since(start) - sampling}
				record(row)
				t.Logf("%s", row)
				require.LessOrEqual(t, last.keys, first.keys,
					"keys grew from %d after %d requests to %d after %d", first.keys, warm, last.keys, requests)
				require.LessOrEqual(t, last.keyBytes, first.keyBytes+keySlack(first.keyBytes),
					"the keys' memory grew from %d B after %d requests to %d B after %d", first.keyBytes, warm, last.keyBytes, requests)
				require.LessOrEqual(t, last.memory, first.memory+memorySlack(first.memory),
					"used_memory grew from %d B after %d requests to %d B after %d", first.memory, warm, last.memory, requests)
			})
		}
	}
}

// keySlack is the growth of the keys' own memory (MEMORY USAGE) the soak tolerates: delivery
// IDs and counters gain digits as they grow. A leak of one small hash field per request
// exceeds it within the short run (320 requests after the warm-up at about 20 bytes each
// already pass 4 KiB).
func keySlack(base int64) int64 { return max(base/100, 4<<10) }

// memorySlack is the used_memory growth the soak tolerates: besides the keys, used_memory
// holds client buffers (a wait connection opens and closes with each subscription) and
// allocator state, which move by tens of kilobytes whatever relq does. keySlack is the fine
// check; this one catches growth outside the keys.
func memorySlack(base int64) int64 { return max(base/20, 256<<10) }

// snapshot is what Redis holds at one moment.
type snapshot struct {
	keys     int64 // every key
	keyBytes int64 // MEMORY USAGE of those keys
	memory   int64 // INFO used_memory
}

// settle samples Redis once the last request's asynchronous clean-up (an ephemeral group's
// Leave runs as its subscription stops) has had its turn: it waits until two samples 100 ms
// apart agree on the key count, so a sample never catches a request half done.
func settle(t *testing.T, client redis.UniversalClient) snapshot {
	prev := read(t, client)
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		cur := read(t, client)
		if cur.keys == prev.keys {
			return cur
		}
		prev = cur
	}
	return prev
}

// read takes one snapshot: SCAN of the whole (private) server, then MEMORY USAGE of each key.
func read(t *testing.T, client redis.UniversalClient) snapshot {
	ctx := context.Background()
	var s snapshot
	var names []string
	iter := client.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		names = append(names, iter.Val())
	}
	require.NoError(t, iter.Err())
	pipe := client.Pipeline()
	usage := make([]*redis.IntCmd, len(names))
	for i, k := range names {
		usage[i] = pipe.MemoryUsage(ctx, k)
	}
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) { // a key that expired meanwhile
		require.NoError(t, err)
	}
	for _, u := range usage {
		if u.Err() == nil {
			s.keys++
			s.keyBytes += u.Val()
		}
	}
	s.memory, err = usedMemory(ctx, client)
	require.NoError(t, err)
	return s
}

func usedMemory(ctx context.Context, client redis.UniversalClient) (int64, error) {
	info, err := client.InfoMap(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	var n int64
	_, err = fmt.Sscan(info["Memory"]["used_memory"], &n)
	return n, err
}

// subscriberConfig is what every Subscriber of the soak starts from: a short Block and
// CloseTimeout, so that subscriptions stop quickly.
var subscriberConfig = pubsub.SubscriberConfig{Block: 100 * time.Millisecond, CloseTimeout: 5 * time.Second}

// newSubscriber returns a Subscriber of group on b, closed with the test.
func newSubscriber(t *testing.T, b backend.Backend, cfg pubsub.SubscriberConfig) *pubsub.Subscriber {
	cfg.Block, cfg.CloseTimeout = subscriberConfig.Block, subscriberConfig.CloseTimeout
	sub, err := pubsub.NewSubscriber(b, cfg, watermill.NopLogger{})
	require.NoError(t, err)
	return sub
}

func newPublisher(t *testing.T, b backend.Backend) message.Publisher {
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, watermill.NopLogger{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	return pub
}

func closeBackend(b backend.Backend) {
	if c, ok := b.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}
