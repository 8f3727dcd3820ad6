package benchmarks_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/benchmarks"
	"github.com/relq/relq/internal/redistest"
)

// The measurements of `relq bench` at small scale (benchmarks.QuickConfig), as Go
// benchmarks that report figures and never assert speed. Run:
//
//	go test -run '^$' -bench . -benchtime 1x ./benchmarks/
//
// Each benchmark gets a private server, so no other test's commands count in the idle and
// memory figures. For figures worth quoting, run `relq bench`.

func TestMain(m *testing.M) { redistest.Main(m) }

func server(b *testing.B) *redis.Client {
	b.Helper()
	return redistest.Start(b, redistest.Options{}).Client(b)
}

// forTargets runs f as a sub-benchmark for each target, b.N times.
func forTargets(b *testing.B, f func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config)) {
	c := server(b)
	cfg := benchmarks.QuickConfig()
	for _, t := range benchmarks.Targets() {
		b.Run(t.Name, func(b *testing.B) {
			for range b.N {
				f(b, c, t, cfg)
			}
		})
	}
}

func BenchmarkPublish(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		single, err := benchmarks.MeasurePublish(context.Background(), c, t, cfg, 1)
		require.NoError(b, err)
		batch, err := benchmarks.MeasurePublish(context.Background(), c, t, cfg, benchmarks.BatchSizeDefault)
		require.NoError(b, err)
		b.ReportMetric(single.PerSec, "single-msg/s")
		b.ReportMetric(batch.PerSec, "batch100-msg/s")
		b.ReportMetric(single.Redis.CPUMicrosPerMessage, "single-redis-us/msg")
		b.ReportMetric(batch.Redis.CPUMicrosPerMessage, "batch100-redis-us/msg")
		b.ReportMetric(single.Redis.CommandsPerMessage, "single-redis-cmds/msg")
		b.ReportMetric(batch.Redis.CommandsPerMessage, "batch100-redis-cmds/msg")
	})
}

func BenchmarkPublishConcurrent(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		res, err := benchmarks.MeasurePublishConcurrent(context.Background(), c, t, cfg)
		require.NoError(b, err)
		b.ReportMetric(res.PerSec, "msg/s")
		b.ReportMetric(res.Redis.CPUMicrosPerMessage, "redis-us/msg")
		b.ReportMetric(res.Redis.CommandsPerMessage, "redis-cmds/msg")
	})
}

func BenchmarkConsume(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		res, err := benchmarks.MeasureConsume(context.Background(), c, t, cfg)
		require.NoError(b, err)
		b.ReportMetric(res.PerSec, "msg/s")
		b.ReportMetric(res.Redis.CPUMicrosPerMessage, "redis-us/msg")
		b.ReportMetric(res.Redis.CommandsPerMessage, "redis-cmds/msg")
	})
}

func BenchmarkScale(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		if t.Baseline() {
			b.Skip("the scale phase drives relq backends")
		}
		rep, err := benchmarks.MeasureScale(context.Background(), c, t, cfg)
		require.NoError(b, err)
		b.ReportMetric(float64(rep.Slowest.Micros), "slowest-us")
	})
}

func BenchmarkEndToEnd(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		for _, n := range benchmarks.EndToEndSubscribersDefault {
			rate, err := benchmarks.MeasureEndToEnd(context.Background(), c, t, cfg, n)
			require.NoError(b, err)
			b.ReportMetric(rate, "subs"+strconv.Itoa(n)+"-msg/s")
			rate, err = benchmarks.MeasureEndToEndConcurrent(context.Background(), c, t, cfg, n)
			require.NoError(b, err)
			b.ReportMetric(rate, "subs"+strconv.Itoa(n)+"-concurrent-msg/s")
		}
	})
}

func BenchmarkPickupLatency(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		p, err := benchmarks.MeasurePickupLatency(context.Background(), c, t, cfg)
		require.NoError(b, err)
		b.ReportMetric(p.P50, "p50-ms")
		b.ReportMetric(p.P99, "p99-ms")
		b.ReportMetric(p.Max, "max-ms")
	})
}

func BenchmarkDelayLateness(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		p, err := benchmarks.MeasureLateness(context.Background(), c, t, cfg)
		if errors.Is(err, benchmarks.ErrNoDelay) {
			b.Skip("no on-time delay")
		}
		require.NoError(b, err)
		b.ReportMetric(p.Upper.P50, "p50-late-ms")
		b.ReportMetric(p.Upper.P99, "p99-late-ms")
		b.ReportMetric(p.Lower.P50, "p50-late-lb-ms")
		b.ReportMetric(p.Lower.P99, "p99-late-lb-ms")
	})
}

// BenchmarkRetryLateness reports how late a nacked message comes back after its due time
// while its subscriber is idle, over 100 rounds (RetryRoundsDefault, not QuickConfig's 10:
// p99 needs them).
func BenchmarkRetryLateness(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		cfg.RetryRounds = benchmarks.RetryRoundsDefault
		p, err := benchmarks.MeasureRetryLateness(context.Background(), c, t, cfg)
		if errors.Is(err, benchmarks.ErrNoDelay) {
			b.Skip("no nack delay")
		}
		require.NoError(b, err)
		b.ReportMetric(p.P50, "p50-late-ms")
		b.ReportMetric(p.P99, "p99-late-ms")
		b.ReportMetric(p.Max, "max-late-ms")
	})
}

func BenchmarkRecovery(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		r, err := benchmarks.MeasureRecovery(context.Background(), c, t, cfg)
		require.NoError(b, err)
		b.ReportMetric(r.TotalMS, "total-ms")
		b.ReportMetric(r.AfterLeaseMS, "after-lease-ms")
	})
}

func BenchmarkMemory(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		bytes, err := benchmarks.MeasureMemory(context.Background(), c, t, cfg)
		require.NoError(b, err)
		b.ReportMetric(bytes, "bytes/msg")
	})
}

// BenchmarkMemoryPerPublish reports what 10,000 single-message Publish calls leave in Redis:
// used_memory growth per call, and the keys after them (DBSIZE) and added by them. Run:
//
//	go test -run '^$' -bench MemoryPerPublish -benchtime 1x ./benchmarks/
func BenchmarkMemoryPerPublish(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		m, err := benchmarks.MeasurePublishMemory(context.Background(), c, t, cfg, benchmarks.PublishMemoryCallsDefault)
		require.NoError(b, err)
		b.ReportMetric(m.BytesPerCall, "bytes/publish")
		b.ReportMetric(float64(m.Keys), "keys")
		b.ReportMetric(float64(m.KeysAdded), "keys-added")
	})
}

func BenchmarkIdleCommands(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		cost, err := benchmarks.MeasureIdleCommands(context.Background(), c, t, cfg)
		require.NoError(b, err)
		b.ReportMetric(cost.SentPerSec, "sent-cmds/s")
		b.ReportMetric(cost.RedisPerSec, "redis-cmds/s")
	})
}

func BenchmarkReferenceLPUSH(b *testing.B) {
	path, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Skip("redis-benchmark not on PATH")
	}
	c := server(b)
	cfg := benchmarks.QuickConfig()
	cfg.RedisBenchmark = path
	for range b.N {
		ref, err := benchmarks.MeasureReference(context.Background(), c, cfg)
		require.NoError(b, err)
		require.NotNil(b, ref.LPUSHPerSec, ref.Note)
		b.ReportMetric(*ref.LPUSHPerSec, "lpush/s")
	}
}
