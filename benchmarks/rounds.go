package benchmarks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The figures that feed ratios and targets are measured in interleaved rounds: round r
// measures one figure for every target back to back (seconds apart), then the next figure,
// with the targets' order rotated by r, and the run makes Config.Rounds rounds. On a shared
// machine whose speed drifts by tens of percent over minutes, a figure of one target and the
// baseline's are then taken in the same few seconds, so their ratio in one round is mostly
// free of the drift; the rounds, spread over the run, sample it, and the median of the
// per-round ratios is what the report prints and judges. See medianRatio.

// RoundValues are one figure's values in every round, in round order. A figure's field in
// TargetReport is their median.
type RoundValues struct {
	// PerSec: messages per second.
	PerSec []float64 `json:"per_sec"`
	// CPUMicrosPerMessage and CommandsPerMessage: the Redis cost, for the figures that
	// measure it.
	CPUMicrosPerMessage []float64 `json:"cpu_us_per_msg,omitempty"`
	CommandsPerMessage  []float64 `json:"commands_per_msg,omitempty"`
}

// Keys of TargetReport.Rounds.
const (
	RoundPublishSingle     = "publish_single"
	RoundPublishBatch      = "publish_batch"
	RoundPublishConcurrent = "publish_concurrent"
	RoundConsume           = "consume"
)

// RoundEndToEnd and RoundEndToEndConcurrent are the Rounds keys of the end-to-end figures
// at n subscribers.
func RoundEndToEnd(n int) string           { return fmt.Sprintf("end_to_end/%d", n) }
func RoundEndToEndConcurrent(n int) string { return fmt.Sprintf("end_to_end_concurrent/%d", n) }

// Spread summarises per-round values: Median is what is reported and judged, Low and High
// the lowest and highest round, Rounds every value in round order.
type Spread struct {
	Median float64   `json:"median"`
	Low    float64   `json:"low"`
	High   float64   `json:"high"`
	Rounds []float64 `json:"rounds"`
}

// median returns the middle value of vs, the mean of the two middle ones for an even count,
// and 0 for none. vs is left as it is.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// spreadOf summarises vs; ok is false when there is none.
func spreadOf(vs []float64) (Spread, bool) {
	if len(vs) == 0 {
		return Spread{}, false
	}
	return Spread{Median: median(vs), Low: slices.Min(vs), High: slices.Max(vs), Rounds: slices.Clone(vs)}, true
}

// medianRatio pairs round i of a target with round i of the baseline (measured seconds
// apart) and summarises the per-round ratios t[i]/base[i], over the rounds where the
// baseline's figure is positive and the target's not negative. The median of per-round
// ratios, not the ratio of the two medians: a round in which only one of the two was slowed
// (the machine drifted between them) moves one ratio, which the median drops, while it would
// move one median and so the ratio of medians. (The ratio of medians always lies within
// Low–High all the same.)
func medianRatio(t, base []float64) (Spread, bool) {
	var ratios []float64
	for i := range min(len(t), len(base)) {
		if base[i] > 0 && t[i] >= 0 {
			ratios = append(ratios, t[i]/base[i])
		}
	}
	return spreadOf(ratios)
}

// medianCost is the field-by-field median of per-round costs: CPU, main-thread CPU (when
// every round has it), commands, and each command's calls and time (0 in a round without
// it). Messages is the first round's.
func medianCost(costs []RedisCost) RedisCost {
	if len(costs) == 0 {
		return RedisCost{}
	}
	pick := func(f func(RedisCost) float64) float64 {
		vs := make([]float64, len(costs))
		for i, c := range costs {
			vs[i] = f(c)
		}
		return median(vs)
	}
	out := RedisCost{
		Messages:            costs[0].Messages,
		CPUMicrosPerMessage: pick(func(c RedisCost) float64 { return c.CPUMicrosPerMessage }),
		CommandsPerMessage:  pick(func(c RedisCost) float64 { return c.CommandsPerMessage }),
		ByCommand:           map[string]CommandCost{},
	}
	main := true
	names := map[string]bool{}
	for _, c := range costs {
		main = main && c.MainThreadCPUMicrosPerMessage != nil
		for name := range c.ByCommand {
			names[name] = true
		}
	}
	if main {
		v := pick(func(c RedisCost) float64 { return *c.MainThreadCPUMicrosPerMessage })
		out.MainThreadCPUMicrosPerMessage = &v
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		out.ByCommand[name] = CommandCost{
			Calls:  pick(func(c RedisCost) float64 { return c.ByCommand[name].Calls }),
			Micros: pick(func(c RedisCost) float64 { return c.ByCommand[name].Micros }),
		}
	}
	return out
}

// roundOrder is the targets' order in round r (from 0): Targets order rotated left by r, so
// that over the rounds each target takes each place (first after another figure's clean-up,
// right after the baseline, ...).
func roundOrder(n, r int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = (i + r) % n
	}
	return order
}

// roundFigure is one figure measured in rounds.
type roundFigure struct {
	// key names it in TargetReport.Rounds; label in the progress lines.
	key, label string
	// cost says whether measure reads the Redis cost.
	cost    bool
	measure func(ctx context.Context, c *redis.Client, t Target, cfg Config) (Throughput, error)
	// set stores the median in the target's report.
	set func(tr *TargetReport, median Throughput)
}

// roundFigures are the figures of the rounds, in the order each round measures them.
func roundFigures(cfg Config) []roundFigure {
	figs := []roundFigure{
		{key: RoundPublishSingle, label: fmt.Sprintf("publish, %d messages one per call", cfg.PublishMessages), cost: true,
			measure: func(ctx context.Context, c *redis.Client, t Target, cfg Config) (Throughput, error) {
				return MeasurePublish(ctx, c, t, cfg, 1)
			},
			set: func(tr *TargetReport, m Throughput) {
				tr.PublishSinglePerSec, tr.PublishSingleRedis = m.PerSec, m.Redis
			}},
		{key: RoundPublishBatch, label: fmt.Sprintf("publish, %d messages %d per call", cfg.BatchMessages, cfg.BatchSize), cost: true,
			measure: func(ctx context.Context, c *redis.Client, t Target, cfg Config) (Throughput, error) {
				return MeasurePublish(ctx, c, t, cfg, cfg.BatchSize)
			},
			set: func(tr *TargetReport, m Throughput) { tr.PublishBatchPerSec, tr.PublishBatchRedis = m.PerSec, m.Redis }},
		{key: RoundPublishConcurrent, cost: true,
			label: fmt.Sprintf("publish from %d goroutines, %d messages one per call", cfg.PublishGoroutines, cfg.PublishConcurrentMessages),
			measure: func(ctx context.Context, c *redis.Client, t Target, cfg Config) (Throughput, error) {
				return MeasurePublishConcurrent(ctx, c, t, cfg)
			},
			set: func(tr *TargetReport, m Throughput) { tr.PublishConcurrent = m }},
		{key: RoundConsume, cost: true,
			label:   fmt.Sprintf("consume+ack, %d messages, %d subscribers", cfg.ConsumeMessages, cfg.ConsumeSubscribers),
			measure: MeasureConsume,
			set:     func(tr *TargetReport, m Throughput) { tr.Consume = m }},
	}
	for _, concurrent := range []bool{false, true} {
		for _, n := range cfg.EndToEndSubscribers {
			key, label := RoundEndToEnd(n), fmt.Sprintf("end-to-end, %d messages, %d subscribers", cfg.EndToEndMessages, n)
			if concurrent {
				key, label = RoundEndToEndConcurrent(n), fmt.Sprintf("end-to-end while publishing, %d messages, %d subscribers", cfg.EndToEndMessages, n)
			}
			sub := fmt.Sprint(n)
			figs = append(figs, roundFigure{key: key, label: label,
				measure: func(ctx context.Context, c *redis.Client, t Target, cfg Config) (Throughput, error) {
					rate, err := endToEnd(ctx, c, t, cfg, n, concurrent)
					return Throughput{PerSec: rate}, err
				},
				set: func(tr *TargetReport, m Throughput) {
					if concurrent {
						tr.EndToEndConcurrentPerSec[sub] = m.PerSec
					} else {
						tr.EndToEndPerSec[sub] = m.PerSec
					}
				}})
		}
	}
	return figs
}

// runRounds measures the round figures of every target in cfg.Rounds interleaved rounds
// and stores, in rep.Targets (one per target, in order), every round's values and their
// medians; rep.RoundOrders gets each round's order.
func runRounds(ctx context.Context, c *redis.Client, targets []Target, rep *Report, cfg Config, progress func(string, ...any)) error {
	figs := roundFigures(cfg)
	samples := make([]map[string][]Throughput, len(targets))
	for i := range samples {
		samples[i] = map[string][]Throughput{}
	}
	for r := range cfg.Rounds {
		order := roundOrder(len(targets), r)
		names := make([]string, len(order))
		for j, i := range order {
			names[j] = targets[i].Name
		}
		rep.RoundOrders = append(rep.RoundOrders, names)
		for _, f := range figs {
			parts := make([]string, 0, len(order))
			for _, i := range order {
				t := targets[i]
				tp, err := f.measure(ctx, c, t, cfg)
				if err != nil {
					return fmt.Errorf("round %d, %s, %s: %w", r+1, f.label, t.Name, err)
				}
				samples[i][f.key] = append(samples[i][f.key], tp)
				part := fmt.Sprintf("%s %s/s", t.Name, number(tp.PerSec))
				if f.cost {
					part += fmt.Sprintf(" %sµs %s cmd", number(tp.Redis.CPUMicrosPerMessage), number(tp.Redis.CommandsPerMessage))
				}
				parts = append(parts, part)
			}
			progress("round %d/%d, %s: %s", r+1, cfg.Rounds, f.label, strings.Join(parts, "; "))
		}
	}
	for i := range targets {
		tr := &rep.Targets[i]
		if tr.Rounds == nil {
			tr.Rounds = map[string]RoundValues{}
		}
		for _, f := range figs {
			tps := samples[i][f.key]
			var rv RoundValues
			costs := make([]RedisCost, 0, len(tps))
			for _, tp := range tps {
				rv.PerSec = append(rv.PerSec, tp.PerSec)
				if f.cost {
					rv.CPUMicrosPerMessage = append(rv.CPUMicrosPerMessage, tp.Redis.CPUMicrosPerMessage)
					rv.CommandsPerMessage = append(rv.CommandsPerMessage, tp.Redis.CommandsPerMessage)
					costs = append(costs, tp.Redis)
				}
			}
			tr.Rounds[f.key] = rv
			m := Throughput{PerSec: median(rv.PerSec)}
			if f.cost {
				m.Redis = medianCost(costs)
			}
			f.set(tr, m)
		}
	}
	return nil
}
