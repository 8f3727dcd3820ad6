package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
	// Reference is redis-benchmark's LPUSH rate on the same server, run before and after the
	// rounds.
	Reference Reference `json:"reference"`
	// RoundOrders are the targets' order in each round of the interleaved figures.
	RoundOrders [][]string `json:"round_orders"`
	// Targets are the relq backends and, last, the baseline.
	Targets []TargetReport `json:"targets"`
	// Goals are the project's targets, judged on Targets.
	Goals       []Goal  `json:"goals"`
	WallSeconds float64 `json:"wall_seconds"`
}

// TargetReport holds every figure of one target. The figures that feed ratios and targets
// (publish, consume+ack, end-to-end; their Redis costs) are medians over Config.Rounds
// interleaved rounds, each round's value in Rounds; the others are measured once.
type TargetReport struct {
	Name     string `json:"name"`
	Baseline bool   `json:"baseline"`
	// Rounds holds every round's value of each figure measured in rounds, by key
	// (RoundPublishSingle, RoundEndToEnd(4), ...).
	Rounds map[string]RoundValues `json:"rounds"`
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
	DelayNote string `json:"delay_note,omitempty"`
	// RetryLatenessMS: a nacked message's second handler start minus (Nack call +
	// RetryDelay), subscriber idle; nil for the baseline (no nack delay).
	RetryLatenessMS *Percentiles `json:"retry_lateness_ms,omitempty"`
	Recovery        Recovery     `json:"recovery"`
	// MemoryBytesPerMessage: INFO used_memory growth per queued message.
	MemoryBytesPerMessage float64 `json:"memory_bytes_per_message"`
	// Idle: commands/s one idle subscriber costs.
	Idle IdleCost `json:"idle_commands"`
	// Priority: how soon a high-priority message overtakes a due backlog; nil for targets
	// without Capabilities.Priorities.
	Priority *PriorityPickup `json:"priority_pickup,omitempty"`
	// Scale: the slowest Redis call of each path on a big group; nil for the baseline and
	// when Config.SkipScale.
	Scale *ScaleReport `json:"scale,omitempty"`
}

// Run measures every target and the reference, one measurement at a time so that none
// disturbs another, and reports progress to cfg.Progress. server describes the Redis.
//
// The order: redis-benchmark; cfg.Rounds interleaved rounds of the figures that feed ratios
// and targets (runRounds); redis-benchmark again, so that its two runs bracket the rounds;
// then, target by target, the figures measured once (latency, lateness, recovery, memory,
// idle cost, scale).
func Run(ctx context.Context, c *redis.Client, server string, cfg Config) (*Report, error) {
	cfg = cfg.WithDefaults()
	start := time.Now()
	rep := &Report{Server: server, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Config: cfg}
	progress := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "[%5.1fs] "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}
	reference := func(when string) (Reference, error) {
		progress("reference, %s: redis-benchmark -P 16 -t lpush -n %d", when, cfg.ReferenceRequests)
		if err := settle(ctx, c); err != nil {
			return Reference{}, err
		}
		refCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		ref, err := MeasureReference(refCtx, c, cfg)
		cancel()
		if err != nil {
			return Reference{}, fmt.Errorf("reference, %s: %w", when, err)
		}
		if ref.LPUSHPerSec != nil {
			progress("reference, %s: LPUSH %.0f/s", when, *ref.LPUSHPerSec)
		} else {
			progress("reference, %s: %s", when, ref.Note)
		}
		return ref, nil
	}

	first, err := reference("start")
	if err != nil {
		return nil, err
	}
	targets := Targets()
	for _, t := range targets {
		rep.Targets = append(rep.Targets, TargetReport{Name: t.Name, Baseline: t.Baseline(),
			EndToEndPerSec: map[string]float64{}, EndToEndConcurrentPerSec: map[string]float64{}})
	}
	progress("%d interleaved round(s) of publish, consume+ack and end-to-end, every target back to back per figure", cfg.Rounds)
	if err := runRounds(ctx, c, targets, rep, cfg, progress); err != nil {
		return nil, err
	}
	last, err := reference("end")
	if err != nil {
		return nil, err
	}
	rep.Reference = combineReferences(first, last)
	if rep.Reference.LPUSHPerSec != nil {
		progress("reference: %.0f/s, the median of the runs before and after the rounds", *rep.Reference.LPUSHPerSec)
	}
	for i, t := range targets {
		if err := runOnce(ctx, c, t, &rep.Targets[i], cfg, progress); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	rep.Goals = rep.judge()
	rep.WallSeconds = time.Since(start).Seconds()
	progress("done in %.0fs", rep.WallSeconds)
	return rep, nil
}

// runOnce measures the figures of one target that are measured once, not in rounds.
func runOnce(ctx context.Context, c *redis.Client, t Target, tr *TargetReport, cfg Config, progress func(string, ...any)) error {
	var err error
	if tr.PickupLatencyMS, err = MeasurePickupLatency(ctx, c, t, cfg); err != nil {
		return err
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
		return err
	default:
		tr.DelayLatenessMS = &late
		progress("%s: lateness of %d delayed messages: p50 %.2fms p99 %.2fms (from the Publish call)",
			t.Name, cfg.DelayMessages, late.Upper.P50, late.Upper.P99)
	}
	retry, err := MeasureRetryLateness(ctx, c, t, cfg)
	switch {
	case errors.Is(err, ErrNoDelay):
		progress("%s: retry lateness: no nack delay", t.Name)
	case err != nil:
		return err
	default:
		tr.RetryLatenessMS = &retry
		progress("%s: retry lateness of %d nacks with %v: p50 %.2fms p99 %.2fms max %.2fms (from the Nack call)",
			t.Name, cfg.RetryRounds, cfg.RetryDelay, retry.P50, retry.P99, retry.Max)
	}
	if tr.Recovery, err = MeasureRecovery(ctx, c, t, cfg); err != nil {
		return err
	}
	progress("%s: recovery %.0fms (%.0fms after the %.0fms lease; %s)", t.Name,
		tr.Recovery.TotalMS, tr.Recovery.AfterLeaseMS, tr.Recovery.LeaseMS, tr.Recovery.Scan)
	if tr.MemoryBytesPerMessage, err = MeasureMemory(ctx, c, t, cfg); err != nil {
		return err
	}
	progress("%s: memory %.0f bytes per queued message (%d queued)", t.Name, tr.MemoryBytesPerMessage, cfg.MemoryMessages)
	if tr.Idle, err = MeasureIdleCommands(ctx, c, t, cfg); err != nil {
		return err
	}
	progress("%s: idle subscriber: sends %.1f commands/s, Redis runs %.1f/s", t.Name, tr.Idle.SentPerSec, tr.Idle.RedisPerSec)
	if err := runPriority(ctx, c, t, tr, cfg, progress); err != nil {
		return err
	}
	if cfg.SkipScale || t.Baseline() {
		return nil
	}
	progress("%s: scale: %d in flight, %d delayed, %d dead letters, %d topics", t.Name,
		cfg.ScaleInFlight, cfg.ScaleDelayed, cfg.ScaleDeadLetters, cfg.ScaleTopics)
	sc, err := MeasureScale(ctx, c, t, cfg)
	if err != nil {
		return err
	}
	tr.Scale = &sc
	if sc.Note != "" {
		progress("%s: scale: %s", t.Name, sc.Note)
	} else {
		progress("%s: scale: filled in %.0fs; slowest call %dµs (%s: %s)", t.Name, sc.FillSeconds,
			sc.Slowest.Micros, sc.Slowest.Op, strings.Join(sc.Slowest.Command, " "))
	}
	return nil
}
