package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Report is the outcome of a run. Its JSON form is `relq bench --json`.
type Report struct {
	// Server describes the Redis measured.
	Server string `json:"server"`
	// CPUs and GoVersion describe the machine running the clients (and, locally, Redis).
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	Config    Config `json:"config"`
	// Reference is redis-benchmark's LPUSH rate on the same server.
	Reference Reference `json:"reference"`
	// Targets are the relq backends and, last, the baseline.
	Targets []TargetReport `json:"targets"`
	// Goals are the project's targets, judged on Targets.
	Goals       []Goal  `json:"goals"`
	WallSeconds float64 `json:"wall_seconds"`
}

// TargetReport holds every figure of one target.
type TargetReport struct {
	Name     string `json:"name"`
	Baseline bool   `json:"baseline"`
	// PublishSinglePerSec: messages/s, one message per Publish call.
	PublishSinglePerSec float64 `json:"publish_single_per_sec"`
	// PublishBatchPerSec: messages/s, BatchSize messages per Publish call.
	PublishBatchPerSec float64 `json:"publish_batch_per_sec"`
	// PublishSingleRedis and PublishBatchRedis: what those two cost Redis per message.
	PublishSingleRedis RedisCost `json:"publish_single_redis"`
	PublishBatchRedis  RedisCost `json:"publish_batch_redis"`
	// PublishConcurrent: PublishGoroutines goroutines sharing one Publisher, one message per
	// Publish call.
	PublishConcurrent Throughput `json:"publish_concurrent"`
	// Consume: ConsumeSubscribers subscribers (relq: Concurrency ConsumeConcurrency) consume
	// and ack a pre-filled backlog; its Redis cost is the consume+ack figure.
	Consume Throughput `json:"consume"`
	// EndToEndPerSec: messages/s from a pre-filled backlog through handler and ack, by the
	// number of subscribers ("1", "4", "16").
	EndToEndPerSec map[string]float64 `json:"end_to_end_per_sec"`
	// EndToEndConcurrentPerSec: messages/s through handler and ack while one producer
	// publishes them in batches, from the first Publish to the last Ack, by the number of
	// subscribers ("1", "4", "16").
	EndToEndConcurrentPerSec map[string]float64 `json:"end_to_end_concurrent_per_sec"`
	// PickupLatencyMS: Publish returning to the handler starting, idle subscriber.
	PickupLatencyMS Percentiles `json:"pickup_latency_ms"`
	// DelayLatenessMS: handler start minus due time; nil without on-time delay.
	DelayLatenessMS *Lateness `json:"delay_lateness_ms"`
	// DelayNote says why DelayLatenessMS is missing.
	DelayNote string   `json:"delay_note,omitempty"`
	Recovery  Recovery `json:"recovery"`
	// MemoryBytesPerMessage: INFO used_memory growth per queued message.
	MemoryBytesPerMessage float64 `json:"memory_bytes_per_message"`
	// Idle: commands/s one idle subscriber costs.
	Idle IdleCost `json:"idle_commands"`
	// Scale: the slowest Redis call of each path on a big group; nil for the baseline and
	// when Config.SkipScale.
	Scale *ScaleReport `json:"scale,omitempty"`
}

// Run measures every target and the reference, one measurement at a time so that none
// disturbs another, and reports progress to cfg.Progress. server describes the Redis.
func Run(ctx context.Context, c *redis.Client, server string, cfg Config) (*Report, error) {
	cfg = cfg.WithDefaults()
	start := time.Now()
	rep := &Report{Server: server, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Config: cfg}
	progress := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "[%5.1fs] "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}

	progress("reference: redis-benchmark -P 16 -t lpush -n %d", cfg.ReferenceRequests)
	refCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	ref, err := MeasureReference(refCtx, c, cfg)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	rep.Reference = ref
	if ref.LPUSHPerSec != nil {
		progress("reference: LPUSH %.0f/s", *ref.LPUSHPerSec)
	} else {
		progress("reference: %s", ref.Note)
	}

	for _, t := range Targets() {
		tr, err := runTarget(ctx, c, t, cfg, progress)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		rep.Targets = append(rep.Targets, tr)
	}
	rep.Goals = rep.judge()
	rep.WallSeconds = time.Since(start).Seconds()
	progress("done in %.0fs", rep.WallSeconds)
	return rep, nil
}

func runTarget(ctx context.Context, c *redis.Client, t Target, cfg Config, progress func(string, ...any)) (TargetReport, error) {
	tr := TargetReport{Name: t.Name, Baseline: t.Baseline(), EndToEndPerSec: map[string]float64{},
		EndToEndConcurrentPerSec: map[string]float64{}}
	progress("%s: publish, %d messages one per call", t.Name, cfg.PublishMessages)
	single, err := MeasurePublish(ctx, c, t, cfg, 1)
	if err != nil {
		return tr, err
	}
	tr.PublishSinglePerSec, tr.PublishSingleRedis = single.PerSec, single.Redis
	progress("%s: publish %.0f/s, Redis %.1fµs and %.2f commands per message; batched, %d messages %d per call",
		t.Name, single.PerSec, single.Redis.CPUMicrosPerMessage, single.Redis.CommandsPerMessage, cfg.BatchMessages, cfg.BatchSize)
	batch, err := MeasurePublish(ctx, c, t, cfg, cfg.BatchSize)
	if err != nil {
		return tr, err
	}
	tr.PublishBatchPerSec, tr.PublishBatchRedis = batch.PerSec, batch.Redis
	progress("%s: batched publish %.0f/s, Redis %.2fµs and %.2f commands per message", t.Name,
		batch.PerSec, batch.Redis.CPUMicrosPerMessage, batch.Redis.CommandsPerMessage)
	if tr.PublishConcurrent, err = MeasurePublishConcurrent(ctx, c, t, cfg); err != nil {
		return tr, err
	}
	progress("%s: publish from %d goroutines, one per call, %d messages: %.0f/s, Redis %.1fµs per message", t.Name,
		cfg.PublishGoroutines, cfg.PublishConcurrentMessages, tr.PublishConcurrent.PerSec, tr.PublishConcurrent.Redis.CPUMicrosPerMessage)
	if tr.Consume, err = MeasureConsume(ctx, c, t, cfg); err != nil {
		return tr, err
	}
	progress("%s: consume+ack, %d messages, %d subscribers: %.0f/s, Redis %.1fµs and %.2f commands per message", t.Name,
		cfg.ConsumeMessages, cfg.ConsumeSubscribers, tr.Consume.PerSec, tr.Consume.Redis.CPUMicrosPerMessage, tr.Consume.Redis.CommandsPerMessage)
	for _, n := range cfg.EndToEndSubscribers {
		rate, err := MeasureEndToEnd(ctx, c, t, cfg, n)
		if err != nil {
			return tr, err
		}
		tr.EndToEndPerSec[strconv.Itoa(n)] = rate
		progress("%s: end-to-end, %d messages, %d subscribers: %.0f/s", t.Name, cfg.EndToEndMessages, n, rate)
	}
	for _, n := range cfg.EndToEndSubscribers {
		rate, err := MeasureEndToEndConcurrent(ctx, c, t, cfg, n)
		if err != nil {
			return tr, err
		}
		tr.EndToEndConcurrentPerSec[strconv.Itoa(n)] = rate
		progress("%s: end-to-end while publishing, %d messages, %d subscribers: %.0f/s", t.Name, cfg.EndToEndMessages, n, rate)
	}
	if tr.PickupLatencyMS, err = MeasurePickupLatency(ctx, c, t, cfg); err != nil {
		return tr, err
	}
	progress("%s: pickup latency at %d/s: p50 %.2fms p99 %.2fms max %.2fms", t.Name, cfg.LatencyRate,
		tr.PickupLatencyMS.P50, tr.PickupLatencyMS.P99, tr.PickupLatencyMS.Max)
	late, err := MeasureLateness(ctx, c, t, cfg)
	switch {
	case errors.Is(err, ErrNoDelay):
		tr.DelayNote = "no on-time delay"
		if t.Baseline() {
			tr.DelayNote = "no delayed delivery"
		}
		progress("%s: lateness: %s", t.Name, tr.DelayNote)
	case err != nil:
		return tr, err
	default:
		tr.DelayLatenessMS = &late
		progress("%s: lateness of %d delayed messages: p50 %.2fms p99 %.2fms (from the Publish call)",
			t.Name, cfg.DelayMessages, late.Upper.P50, late.Upper.P99)
	}
	if tr.Recovery, err = MeasureRecovery(ctx, c, t, cfg); err != nil {
		return tr, err
	}
	progress("%s: recovery %.0fms (%.0fms after the %.0fms lease; %s)", t.Name,
		tr.Recovery.TotalMS, tr.Recovery.AfterLeaseMS, tr.Recovery.LeaseMS, tr.Recovery.Scan)
	if tr.MemoryBytesPerMessage, err = MeasureMemory(ctx, c, t, cfg); err != nil {
		return tr, err
	}
	progress("%s: memory %.0f bytes per queued message (%d queued)", t.Name, tr.MemoryBytesPerMessage, cfg.MemoryMessages)
	if tr.Idle, err = MeasureIdleCommands(ctx, c, t, cfg); err != nil {
		return tr, err
	}
	progress("%s: idle subscriber: sends %.1f commands/s, Redis runs %.1f/s", t.Name, tr.Idle.SentPerSec, tr.Idle.RedisPerSec)
	if cfg.SkipScale || t.Baseline() {
		return tr, nil
	}
	progress("%s: scale: %d in flight, %d delayed, %d dead letters, %d topics", t.Name,
		cfg.ScaleInFlight, cfg.ScaleDelayed, cfg.ScaleDeadLetters, cfg.ScaleTopics)
	sc, err := MeasureScale(ctx, c, t, cfg)
	if err != nil {
		return tr, err
	}
	tr.Scale = &sc
	if sc.Note != "" {
		progress("%s: scale: %s", t.Name, sc.Note)
	} else {
		progress("%s: scale: filled in %.0fs; slowest call %dµs (%s: %s)", t.Name, sc.FillSeconds,
			sc.Slowest.Micros, sc.Slowest.Op, strings.Join(sc.Slowest.Command, " "))
	}
	return tr, nil
}
