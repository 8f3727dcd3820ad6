package streams

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// BenchmarkReclaimAfterEndedSubscriptions: one group has had 5,000 subscriptions, each of
// which claimed a message under a 100 ms lease, acked it and ended. Once their leases ended,
// Reclaim runs as a subscription's reclaim loop runs it: again at once while it reports more
// (NextExpiry 1ms), which finds the consumers holding nothing and marks them quiet; again so
// once the quiet period passed, which deletes them; then 10 more times. On a private server that logs every command
// (slowlog-log-slower-than 0; Redis 7 logs the commands a script calls too), it reports the
// slowest Redis call of the first Reclaims (slowest-µs, from SLOWLOG GET; median-µs is their
// median script call) and of the 10 after (steady-slowest-µs), how many Reclaims reported more (calls) and the consumers the group has
// left (consumers). Subbenchmarks: the default ConsumerIdleTimeout, and 1 ms.
func BenchmarkReclaimAfterEndedSubscriptions(b *testing.B) {
	const ended = 5000
	srv := redistest.Start(b, redistest.Options{})
	c := srv.Client(b)
	ctx := context.Background()
	for _, idle := range []time.Duration{0, time.Millisecond} {
		name := "idle=default"
		if idle > 0 {
			name = "idle=" + idle.String()
		}
		b.Run(name, func(b *testing.B) {
			be, err := New(c, Options{ConsumerIdleTimeout: idle})
			require.NoError(b, err)
			for i := range b.N {
				topic := fmt.Sprintf("bench-%d-%d", idle, i)
				b.StopTimer()
				endedSubscriptions(b, ctx, be, topic, ended)
				// Redis compiles a script at its first EVAL, once per server: done here, so
				// that the figure is the Reclaims' own.
				_, err := be.Reclaim(ctx, &backend.ReclaimParams{Topic: topic + "-warm", Group: "g"})
				require.NoError(b, err)
				time.Sleep(150 * time.Millisecond) // past the lease: every holder is due
				require.NoError(b, c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
				require.NoError(b, c.ConfigSet(ctx, "slowlog-max-len", "100000").Err())
				require.NoError(b, c.SlowLogReset(ctx).Err())
				b.StartTimer()

				reclaim := func() time.Duration {
					res, err := be.Reclaim(ctx, &backend.ReclaimParams{Topic: topic, Group: "g", OrphanLease: 100 * time.Millisecond})
					require.NoError(b, err)
					return res.NextExpiry
				}
				// The first pass finds the holders empty and marks them quiet; the second, once
				// the quiet period (the lease, or 1 ms) passed, deletes them.
				calls := 0
				for pass := range 2 {
					if pass == 1 {
						b.StopTimer()
						time.Sleep(150 * time.Millisecond)
						b.StartTimer()
					}
					calls++
					for reclaim() == time.Millisecond && calls < 1000 {
						calls++
					}
				}
				b.StopTimer()
				slowest, worst, median := slowestCall(b, ctx, c)
				require.NoError(b, c.SlowLogReset(ctx).Err())
				b.StartTimer()
				for range 10 {
					reclaim()
				}
				b.StopTimer()
				steady, _, _ := slowestCall(b, ctx, c)
				require.NoError(b, c.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err())
				cs, err := c.XInfoConsumers(ctx, be.groupKeys(topic, "g").topic.stream, "g").Result()
				require.NoError(b, err)
				b.ReportMetric(float64(slowest.Microseconds()), "slowest-µs")
				b.ReportMetric(float64(median.Microseconds()), "median-µs")
				b.ReportMetric(float64(steady.Microseconds()), "steady-slowest-µs")
				b.ReportMetric(float64(calls), "calls")
				b.ReportMetric(float64(len(cs)), "consumers")
				b.Logf("%d ended subscriptions: %d Reclaims until none reported more, slowest Redis call %v (%s); "+
					"then 10 Reclaims, slowest %v; %d consumers left", ended, calls, slowest, worst, steady, len(cs))
				b.StartTimer()
			}
		})
	}
}

// endedSubscriptions leaves n consumers in group g of topic as n ended subscriptions would:
// each claimed one message under a 100 ms lease and acked it.
func endedSubscriptions(b *testing.B, ctx context.Context, be *Backend, topic string, n int) {
	b.Helper()
	require.NoError(b, be.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: topic, Group: "g"}))
	msgs := make([]backend.OutMessage, n)
	for i := range msgs {
		msgs[i] = backend.OutMessage{Envelope: backend.Envelope{UUID: fmt.Sprint(i), Payload: []byte("x")}}
	}
	_, err := be.Publish(ctx, &backend.PublishParams{Topic: topic, Messages: msgs})
	require.NoError(b, err)
	for i := range n {
		consumer := fmt.Sprintf("host-1-%08d", i)
		ds, err := be.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: "g", Consumer: consumer, Count: 1, Lease: 100 * time.Millisecond})
		require.NoError(b, err)
		require.Len(b, ds, 1)
		_, err = be.Ack(ctx, &backend.AckParams{Topic: topic, Group: "g", Consumer: consumer, Items: []backend.Held{{ID: ds[0].ID, Attempt: ds[0].Attempt}}})
		require.NoError(b, err)
	}
}

// slowestCall reads the slow log and returns its slowest entry but the benchmark's own
// CONFIG and SLOWLOG calls, that entry's command name, and the median of the script calls.
func slowestCall(b *testing.B, ctx context.Context, c *redis.Client) (time.Duration, string, time.Duration) {
	b.Helper()
	logs, err := c.SlowLogGet(ctx, 100000).Result()
	require.NoError(b, err)
	var slowest time.Duration
	var scripts []time.Duration
	worst := ""
	for _, l := range logs {
		if len(l.Args) == 0 {
			continue
		}
		cmd := strings.ToLower(l.Args[0])
		if cmd == "config" || cmd == "slowlog" {
			continue
		}
		if cmd == "evalsha" || cmd == "eval" {
			scripts = append(scripts, l.Duration)
		}
		if l.Duration > slowest {
			slowest, worst = l.Duration, cmd
		}
	}
	slices.Sort(scripts)
	var median time.Duration
	if len(scripts) > 0 {
		median = scripts[len(scripts)/2]
	}
	return slowest, worst, median
}
