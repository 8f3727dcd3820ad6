package zset_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/internal/seal"
	"github.com/relq/relq/pubsub"
)

// Measurements for docs and release notes: they print figures and never assert speed. Run:
//
//	go test -run '^$' -bench . -benchtime 1x ./adapters/zset/

const (
	latenessMessages = 10_000
	latenessSpread   = 2500 * time.Millisecond // delays are uniform in [0, latenessSpread]
	latenessBatch    = 100
)

// BenchmarkLateness publishes 10,000 messages in batches of 100 with delays spread uniformly
// over 2.5 s, to idle subscribers with default settings (Block 500ms, Prefetch 10,
// Concurrency 1), and reports how long after its due time each one reached a handler: p50,
// p99 and max, in ms.
//
// The due time is set from Redis TIME inside the publish, which the benchmark cannot see, so
// it is bracketed: "late" takes the due time as the Publish's return plus the delay (a lower
// bound of lateness: the real due time is earlier, and a message can reach a handler before
// its Publish has returned), "late-ub" as the Publish's call plus the delay (an upper bound).
func BenchmarkLateness(b *testing.B) {
	for _, subscribers := range []int{1, 4} {
		b.Run(fmt.Sprintf("subscribers=%d", subscribers), func(b *testing.B) {
			server := redistest.Start(b, redistest.Options{})
			backend, err := zset.New(server.Client(b), zset.Options{Prefix: redistest.Prefix(b)})
			require.NoError(b, err)
			var late, upper []time.Duration
			for i := range b.N {
				l, u := lateness(b, backend, "lateness-"+strconv.Itoa(i), subscribers)
				late, upper = append(late, l...), append(upper, u...)
			}
			slices.Sort(late)
			slices.Sort(upper)
			pct := func(d []time.Duration, p float64) float64 {
				return float64(d[min(len(d)-1, int(p*float64(len(d))))]) / float64(time.Millisecond)
			}
			b.ReportMetric(pct(late, 0.50), "p50-late-ms")
			b.ReportMetric(pct(late, 0.99), "p99-late-ms")
			b.ReportMetric(pct(late, 1), "max-late-ms")
			b.ReportMetric(pct(upper, 0.50), "p50-late-ub-ms")
			b.ReportMetric(pct(upper, 0.99), "p99-late-ub-ms")
			b.ReportMetric(pct(upper, 1), "max-late-ub-ms")
		})
	}
}

// lateness runs one round on topic and returns each message's receive time minus its due time,
// taken from the return of its Publish (late) and from the call (upper).
func lateness(b *testing.B, backend *zset.Backend, topic string, subscribers int) (late, upper []time.Duration) {
	b.Helper()
	var (
		mu       sync.Mutex
		received = make(map[string]time.Time, latenessMessages)
		all      = make(chan struct{})
	)
	for range subscribers {
		sub, err := pubsub.NewSubscriber(backend, pubsub.SubscriberConfig{}, watermill.NopLogger{})
		require.NoError(b, err)
		defer func() { require.NoError(b, sub.Close()) }()
		require.NoError(b, sub.SubscribeInitialize(topic))
		ch, err := sub.Subscribe(context.Background(), topic)
		require.NoError(b, err)
		go func() {
			for msg := range ch {
				at := time.Now()
				mu.Lock()
				received[msg.UUID] = at
				if len(received) == latenessMessages {
					close(all)
				}
				mu.Unlock()
				msg.Ack()
			}
		}()
	}
	pub, err := pubsub.NewPublisher(backend, pubsub.PublisherConfig{}, watermill.NopLogger{})
	require.NoError(b, err)
	defer pub.Close()
	time.Sleep(200 * time.Millisecond) // the subscribers claim, find nothing, and block

	rng := rand.New(rand.NewPCG(1, 2))
	due := make(map[string][2]time.Time, latenessMessages) // from the return, from the call
	for i := 0; i < latenessMessages; i += latenessBatch {
		msgs := make([]*message.Message, latenessBatch)
		delays := make([]time.Duration, latenessBatch)
		for j := range msgs {
			msgs[j] = message.NewMessage(watermill.NewUUID(), []byte(strconv.Itoa(i+j)))
			delays[j] = time.Duration(rng.Int64N(int64(latenessSpread/time.Millisecond)+1)) * time.Millisecond
			pubsub.SetDelay(msgs[j], delays[j])
		}
		called := time.Now()
		require.NoError(b, pub.Publish(topic, msgs...))
		returned := time.Now()
		for j, m := range msgs {
			due[m.UUID] = [2]time.Time{returned.Add(delays[j]), called.Add(delays[j])}
		}
	}
	select {
	case <-all:
	case <-time.After(latenessSpread + 30*time.Second):
		mu.Lock()
		defer mu.Unlock()
		require.FailNow(b, "not every message was received", "%d of %d", len(received), latenessMessages)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, at := range received {
		late = append(late, at.Sub(due[id][0]))
		upper = append(upper, at.Sub(due[id][1]))
	}
	return late, upper
}

// BenchmarkIdleCommands runs one subscriber with default settings (Block 500ms) and nothing to
// do for 5 s, and reports the commands it costs per second: "client-cmds/s", the commands the
// subscriber sends (round trips, counted by a go-redis hook), and "redis-cmds/s", the delta of
// INFO commandstats on a server of its own, which also counts the commands run inside scripts
// (and leaves out the INFO calls). An idle subscriber sends one BLPOP per Block and runs
// claim.lua once per engine.IdleProbe. With "scheduled", one message waits due in an hour, so
// each probe reports a due time to sleep toward.
func BenchmarkIdleCommands(b *testing.B) {
	for _, scheduled := range []bool{false, true} {
		b.Run(fmt.Sprintf("scheduled=%v", scheduled), func(b *testing.B) {
			server := redistest.Start(b, redistest.Options{})
			client := server.Client(b)
			sent := &sentCounter{}
			client.AddHook(sent)
			backend, err := zset.New(client, zset.Options{Prefix: redistest.Prefix(b)})
			require.NoError(b, err)
			seal.Open(backend).AddWaitHook(sent) // the BLPOPs run on connections of their own
			const topic, window = "idle", 5 * time.Second
			if scheduled {
				pub, err := pubsub.NewPublisher(backend, pubsub.PublisherConfig{}, watermill.NopLogger{})
				require.NoError(b, err)
				msg := message.NewMessage(watermill.NewUUID(), []byte("later"))
				pubsub.SetDelay(msg, time.Hour)
				require.NoError(b, pub.Publish(topic, msg))
			}
			sub, err := pubsub.NewSubscriber(backend, pubsub.SubscriberConfig{}, watermill.NopLogger{})
			require.NoError(b, err)
			defer func() { require.NoError(b, sub.Close()) }()
			_, err = sub.Subscribe(context.Background(), topic)
			require.NoError(b, err)
			time.Sleep(time.Second) // past the start-up claims and the first reclaim

			var clientPerSecond, redisPerSecond float64
			for range b.N {
				before := commandStats(b, client)
				sent.reset()
				time.Sleep(window)
				byClient := sent.counts()
				after := commandStats(b, client)
				var total, totalClient int64
				var parts, clientParts []string
				for name, n := range after {
					if d := n - before[name]; d > 0 && name != "info" {
						total += d
						parts = append(parts, fmt.Sprintf("%s %.1f/s", name, float64(d)/window.Seconds()))
					}
				}
				for name, n := range byClient {
					if name != "info" {
						totalClient += n
						clientParts = append(clientParts, fmt.Sprintf("%s %.1f/s", name, float64(n)/window.Seconds()))
					}
				}
				slices.Sort(parts)
				slices.Sort(clientParts)
				b.Logf("idle subscriber over %v: sent %s; run by Redis %s", window,
					strings.Join(clientParts, ", "), strings.Join(parts, ", "))
				clientPerSecond = float64(totalClient) / window.Seconds()
				redisPerSecond = float64(total) / window.Seconds()
			}
			b.ReportMetric(clientPerSecond, "client-cmds/s")
			b.ReportMetric(redisPerSecond, "redis-cmds/s")
		})
	}
}

// sentCounter is a go-redis hook that counts the commands a client sends, by name.
type sentCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func (s *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			s.add(c.Name())
		}
		return next(ctx, cmds)
	}
}

func (s *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.add(cmd.Name())
		return next(ctx, cmd)
	}
}

func (s *sentCounter) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int64{}
	}
	s.n[name]++
}

func (s *sentCounter) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n = nil
}

func (s *sentCounter) counts() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.n))
	for k, v := range s.n {
		out[k] = v
	}
	return out
}

// commandStats reads INFO commandstats: calls per command.
func commandStats(b *testing.B, c *redis.Client) map[string]int64 {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(b, err)
	out := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		out[name], _ = strconv.ParseInt(calls, 10, 64)
	}
	return out
}
