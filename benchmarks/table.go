package benchmarks

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/relq/relq/internal/human"
)

// baseline returns the baseline's report, or nil.
func (r *Report) baseline() *TargetReport {
	for i := range r.Targets {
		if r.Targets[i].Baseline {
			return &r.Targets[i]
		}
	}
	return nil
}

// row is one figure of the table: how to read it from a target, and its unit.
type row struct {
	label string
	unit  string
	// get returns the figure and whether the target has it (for a figure measured in
	// rounds, the median).
	get func(*TargetReport) (float64, bool)
	// rounds returns the figure's per-round values, for a figure measured in rounds; nil
	// otherwise.
	rounds func(*TargetReport) []float64
	// ofReference shows the figure as a share of redis-benchmark's LPUSH rate.
	ofReference bool
}

// Per-round values of a figure measured in rounds.
func perSecRounds(key string) func(*TargetReport) []float64 {
	return func(t *TargetReport) []float64 { return t.Rounds[key].PerSec }
}
func cpuRounds(key string) func(*TargetReport) []float64 {
	return func(t *TargetReport) []float64 { return t.Rounds[key].CPUMicrosPerMessage }
}
func commandRounds(key string) func(*TargetReport) []float64 {
	return func(t *TargetReport) []float64 { return t.Rounds[key].CommandsPerMessage }
}

// ratioOf is t's figure over base's: when both have per-round values, the median of the
// per-round ratios with their spread (medianRatio); otherwise (a figure measured once, or a
// report without rounds) the plain ratio of the two figures, as one round.
func ratioOf(t, base *TargetReport, get func(*TargetReport) (float64, bool), rounds func(*TargetReport) []float64) (Spread, bool) {
	if rounds != nil {
		if tr, br := rounds(t), rounds(base); len(tr) > 0 && len(br) > 0 {
			return medianRatio(tr, br)
		}
	}
	v, ok := get(t)
	bv, bok := get(base)
	if !ok || !bok || bv <= 0 || v < 0 {
		return Spread{}, false
	}
	return spreadOf([]float64{v / bv})
}

// ratioText prints a ratio as "×0.62", with the per-round spread when there is more than
// one round: "×0.62 (0.58–0.70)".
func ratioText(s Spread) string {
	if len(s.Rounds) > 1 {
		return fmt.Sprintf("×%.2f (%.2f–%.2f)", s.Median, s.Low, s.High)
	}
	return fmt.Sprintf("×%.2f", s.Median)
}

func rows(r *Report) []row {
	always := func(f func(*TargetReport) float64) func(*TargetReport) (float64, bool) {
		return func(t *TargetReport) (float64, bool) { return f(t), true }
	}
	late := func(f func(*Lateness) float64) func(*TargetReport) (float64, bool) {
		return func(t *TargetReport) (float64, bool) {
			if t.DelayLatenessMS == nil {
				return 0, false
			}
			return f(t.DelayLatenessMS), true
		}
	}
	retry := func(f func(*Percentiles) float64) func(*TargetReport) (float64, bool) {
		return func(t *TargetReport) (float64, bool) {
			if t.RetryLatenessMS == nil {
				return 0, false
			}
			return f(t.RetryLatenessMS), true
		}
	}
	cfg := r.Config
	batch := fmt.Sprintf("publish, %d per call", cfg.BatchSize)
	concurrent := fmt.Sprintf("publish, 1 per call, %d goroutines", cfg.PublishGoroutines)
	consume := fmt.Sprintf("consume+ack, %d subs × %d", cfg.ConsumeSubscribers, cfg.ConsumeConcurrency)
	rs := []row{
		{label: "publish, 1 per call", unit: "msg/s", rounds: perSecRounds(RoundPublishSingle),
			get: always(func(t *TargetReport) float64 { return t.PublishSinglePerSec })},
		{label: batch, unit: "msg/s", ofReference: true, rounds: perSecRounds(RoundPublishBatch),
			get: always(func(t *TargetReport) float64 { return t.PublishBatchPerSec })},
		{label: concurrent, unit: "msg/s", rounds: perSecRounds(RoundPublishConcurrent),
			get: always(func(t *TargetReport) float64 { return t.PublishConcurrent.PerSec })},
		{label: consume, unit: "msg/s", rounds: perSecRounds(RoundConsume),
			get: always(func(t *TargetReport) float64 { return t.Consume.PerSec })},
	}
	costs := []struct {
		label, key string
		get        func(*TargetReport) RedisCost
	}{
		{"publish, 1 per call", RoundPublishSingle, func(t *TargetReport) RedisCost { return t.PublishSingleRedis }},
		{batch, RoundPublishBatch, func(t *TargetReport) RedisCost { return t.PublishBatchRedis }},
		{fmt.Sprintf("publish, %d goroutines", cfg.PublishGoroutines), RoundPublishConcurrent,
			func(t *TargetReport) RedisCost { return t.PublishConcurrent.Redis }},
		{consume, RoundConsume, func(t *TargetReport) RedisCost { return t.Consume.Redis }},
	}
	for _, c := range costs {
		rs = append(rs, row{label: "Redis CPU: " + c.label, unit: "µs/msg", rounds: cpuRounds(c.key),
			get: always(func(t *TargetReport) float64 { return c.get(t).CPUMicrosPerMessage })})
	}
	for _, c := range costs {
		rs = append(rs, row{label: "Redis cmds: " + c.label, unit: "cmd/msg", rounds: commandRounds(c.key),
			get: always(func(t *TargetReport) float64 { return c.get(t).CommandsPerMessage })})
	}
	for _, n := range r.Config.EndToEndSubscribers {
		key := fmt.Sprint(n)
		rs = append(rs, row{label: fmt.Sprintf("end-to-end, %d subscriber(s)", n), unit: "msg/s", rounds: perSecRounds(RoundEndToEnd(n)),
			get: func(t *TargetReport) (float64, bool) { v, ok := t.EndToEndPerSec[key]; return v, ok }})
	}
	for _, n := range r.Config.EndToEndSubscribers {
		key := fmt.Sprint(n)
		rs = append(rs, row{label: fmt.Sprintf("e2e while publishing, %d sub(s)", n), unit: "msg/s", rounds: perSecRounds(RoundEndToEndConcurrent(n)),
			get: func(t *TargetReport) (float64, bool) { v, ok := t.EndToEndConcurrentPerSec[key]; return v, ok }})
	}
	return append(rs,
		row{label: "pickup latency p50", unit: "ms", get: always(func(t *TargetReport) float64 { return t.PickupLatencyMS.P50 })},
		row{label: "pickup latency p99", unit: "ms", get: always(func(t *TargetReport) float64 { return t.PickupLatencyMS.P99 })},
		row{label: "pickup latency max", unit: "ms", get: always(func(t *TargetReport) float64 { return t.PickupLatencyMS.Max })},
		row{label: "delay lateness p50", unit: "ms", get: late(func(l *Lateness) float64 { return l.Upper.P50 })},
		row{label: "delay lateness p99", unit: "ms", get: late(func(l *Lateness) float64 { return l.Upper.P99 })},
		row{label: "retry lateness p50", unit: "ms", get: retry(func(p *Percentiles) float64 { return p.P50 })},
		row{label: "retry lateness p99", unit: "ms", get: retry(func(p *Percentiles) float64 { return p.P99 })},
		row{label: "recovery after lease", unit: "ms", get: always(func(t *TargetReport) float64 { return t.Recovery.AfterLeaseMS })},
		row{label: "recovery total", unit: "ms", get: always(func(t *TargetReport) float64 { return t.Recovery.TotalMS })},
		row{label: "memory per queued message", unit: "bytes", get: always(func(t *TargetReport) float64 { return t.MemoryBytesPerMessage })},
		row{label: "idle: commands sent", unit: "cmd/s", get: always(func(t *TargetReport) float64 { return t.Idle.SentPerSec })},
		row{label: "idle: commands Redis ran", unit: "cmd/s", get: always(func(t *TargetReport) float64 { return t.Idle.RedisPerSec })},
		row{label: "slowest Redis call at scale", unit: "µs", get: func(t *TargetReport) (float64, bool) {
			if t.Scale == nil || t.Scale.Slowest.Command == nil {
				return 0, false
			}
			return float64(t.Scale.Slowest.Micros), true
		}},
	)
}

// number prints a figure with sensible precision.
func number(v float64) string {
	switch a := max(v, -v); {
	case a >= 1000:
		return human.Thousands(int64(math.Round(v)))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// WriteTable prints the report for people: one row per figure, one column per target, each
// relq figure followed by its ratio to the baseline's.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "relq bench: %s\n", r.Server)
	fmt.Fprintf(w, "%d CPUs, %s, payload %d bytes, %.0fs\n", r.CPUs, r.GoVersion, r.Config.PayloadBytes, r.WallSeconds)
	r.writeReference(w)
	rounds := max(r.Config.Rounds, len(r.RoundOrders))
	if rounds > 1 {
		fmt.Fprintf(w, "publish, consume+ack and end-to-end (and their Redis costs): the median of %d interleaved rounds; each round measured\n", rounds)
		fmt.Fprintln(w, "  a figure for every target back to back, in a rotating order; the other figures: measured once")
		fmt.Fprintln(w, "(×N (lo–hi): the median over the rounds of the figure divided by redisstream's in the same round, and the lowest and")
		fmt.Fprintln(w, "  highest of those per-round ratios; ×N alone: one measurement each; higher is better for msg/s, lower for the rest)")
	} else {
		fmt.Fprintln(w, "(×N: the figure divided by redisstream's; higher is better for msg/s, lower for the rest)")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprint(tw, "figure\tunit\t")
	for _, t := range r.Targets {
		fmt.Fprintf(tw, "%s\t", t.Name)
	}
	fmt.Fprintln(tw)
	base := r.baseline()
	for _, rw := range rows(r) {
		fmt.Fprintf(tw, "%s\t%s\t", rw.label, rw.unit)
		bv, bok := 0.0, false
		if base != nil {
			bv, bok = rw.get(base)
		}
		for i := range r.Targets {
			t := &r.Targets[i]
			v, ok := rw.get(t)
			cell := "n/a"
			if ok {
				cell = number(v)
				if !t.Baseline && bok && bv > 0 && v >= 0 {
					if s, ok := ratioOf(t, base, rw.get, rw.rounds); ok {
						cell += " " + ratioText(s)
					}
				}
				if rw.ofReference && r.Reference.LPUSHPerSec != nil {
					cell += fmt.Sprintf(" %.0f%%ref", 100*v / *r.Reference.LPUSHPerSec)
				}
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "end-to-end: backlog of %d pre-filled, subscribers in one group, handler acks at once (relq Concurrency 1, Prefetch 10; redisstream defaults)\n",
		r.Config.EndToEndMessages)
	fmt.Fprintf(w, "e2e while publishing: subscribers start idle, then one producer publishes %d in batches of %d; first Publish -> last Ack\n",
		r.Config.EndToEndMessages, r.Config.BatchSize)
	fmt.Fprintf(w, "pickup latency: Publish return -> handler start, %d messages at %d/s, one idle subscriber\n",
		r.Config.LatencyMessages, r.Config.LatencyRate)
	fmt.Fprintf(w, "delay lateness: handler start - (Publish call + delay), %d messages over %v; lower bound (from the return):",
		r.Config.DelayMessages, r.Config.DelaySpread)
	for _, t := range r.Targets {
		if t.DelayLatenessMS != nil {
			fmt.Fprintf(w, " %s p50 %s p99 %s ms;", t.Name, number(t.DelayLatenessMS.Lower.P50), number(t.DelayLatenessMS.Lower.P99))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "retry lateness: redelivery's handler start - (Nack call + %v), %d messages one at a time, subscriber idle (defaults)\n",
		r.Config.RetryDelay, r.Config.RetryRounds)
	fmt.Fprintf(w, "recovery: a consumer claims with a %v lease and dies; live subscriber scan:", r.Config.RecoveryLease)
	for _, t := range r.Targets {
		fmt.Fprintf(w, " %s %s;", t.Name, t.Recovery.Scan)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "memory: INFO used_memory growth over %d queued messages\n", r.Config.MemoryMessages)
	fmt.Fprintf(w, "idle: one subscriber after one message, over %v; sent by command:", r.Config.IdleWindow)
	for _, t := range r.Targets {
		names := make([]string, 0, len(t.Idle.SentByCommand))
		for name := range t.Idle.SentByCommand {
			names = append(names, name)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, name := range names {
			parts[i] = fmt.Sprintf("%s %.1f/s", name, t.Idle.SentByCommand[name])
		}
		fmt.Fprintf(w, " %s: %s;", t.Name, strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "publish, %d goroutines: %d messages, one per Publish call, on one shared Publisher\n",
		r.Config.PublishGoroutines, r.Config.PublishConcurrentMessages)
	fmt.Fprintf(w, "consume+ack: backlog of %d pre-filled, %d subscribers in one group, handler acks at once (relq Concurrency %d; redisstream defaults, one message in flight each); Redis cost until every ack landed and the subscribers closed\n",
		r.Config.ConsumeMessages, r.Config.ConsumeSubscribers, r.Config.ConsumeConcurrency)
	fmt.Fprintln(w, "Redis CPU: INFO used_cpu_sys + used_cpu_user growth per message (whole server process); cmds: commandstats calls per message, commands inside scripts included")
	r.writeBreakdown(w, "publish, 1 per call", func(t *TargetReport) RedisCost { return t.PublishSingleRedis })
	r.writeBreakdown(w, fmt.Sprintf("consume+ack, %d subs × %d", r.Config.ConsumeSubscribers, r.Config.ConsumeConcurrency),
		func(t *TargetReport) RedisCost { return t.Consume.Redis })
	r.writePriority(w)
	if err := r.writeScale(w); err != nil {
		return err
	}
	return r.writeGoals(w)
}

// writeReference prints the reference line: the rate targets are judged on and, when it
// ran more than once, each run.
func (r *Report) writeReference(w io.Writer) {
	ref := r.Reference
	if ref.LPUSHPerSec == nil {
		fmt.Fprintf(w, "reference: %s\n", ref.Note)
		return
	}
	fmt.Fprintf(w, "reference: redis-benchmark LPUSH -P 16: %s/s", number(*ref.LPUSHPerSec))
	if len(ref.Runs) == 2 {
		fmt.Fprintf(w, ", the mean of %s before the rounds and %s after them", number(ref.Runs[0]), number(ref.Runs[1]))
	} else if len(ref.Runs) > 2 {
		runs := make([]string, len(ref.Runs))
		for i, v := range ref.Runs {
			runs[i] = number(v)
		}
		fmt.Fprintf(w, ", the median of %s", strings.Join(runs, ", "))
	}
	if ref.Note != "" {
		fmt.Fprintf(w, " (%s)", ref.Note)
	}
	fmt.Fprintln(w)
}

// writeBreakdown prints, for each target, the commands of one cost figure, most frequent first.
func (r *Report) writeBreakdown(w io.Writer, label string, get func(*TargetReport) RedisCost) {
	fmt.Fprintf(w, "Redis commands per message, %s:\n", label)
	for i := range r.Targets {
		t := &r.Targets[i]
		by := get(t).ByCommand
		names := make([]string, 0, len(by))
		for name := range by {
			names = append(names, name)
		}
		sort.Slice(names, func(a, b int) bool {
			if by[names[a]].Calls != by[names[b]].Calls {
				return by[names[a]].Calls > by[names[b]].Calls
			}
			return names[a] < names[b]
		})
		var parts []string
		rare := 0
		for _, name := range names {
			if by[name].Calls < 0.005 { // connection set-up and the like
				rare++
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s", name, number(by[name].Calls)))
		}
		if rare > 0 {
			parts = append(parts, fmt.Sprintf("%d rarer (--json)", rare))
		}
		fmt.Fprintf(w, "  %s: %s\n", t.Name, strings.Join(parts, ", "))
	}
}

// writeScale prints the slowest call of each path of the scale phase, by relq backend.
func (r *Report) writeScale(w io.Writer) error {
	var scaled []*TargetReport
	for i := range r.Targets {
		if t := &r.Targets[i]; t.Scale != nil {
			scaled = append(scaled, t)
		}
	}
	if len(scaled) == 0 {
		return nil
	}
	sc := scaled[0].Scale
	fmt.Fprintln(w)
	fmt.Fprintf(w, "scale: %s in flight (claimed, 1h lease), %s delayed (hours), %s dead letters, %s topics; each path %d time(s) after a warm-up;\n",
		number(float64(sc.InFlight)), number(float64(sc.Delayed)), number(float64(sc.DeadLetters)), number(float64(sc.Topics)), r.Config.ScaleRounds)
	fmt.Fprintln(w, "slowest single Redis call of each path, by SLOWLOG, in µs (a script is one call)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprint(tw, "path\t")
	for _, t := range scaled {
		fmt.Fprintf(tw, "%s\t", t.Name)
	}
	fmt.Fprintln(tw)
	var order []string
	seen := map[string]bool{}
	for _, t := range scaled {
		for _, op := range t.Scale.Ops {
			if !seen[op.Name] {
				seen[op.Name] = true
				order = append(order, op.Name)
			}
		}
	}
	for _, name := range order {
		fmt.Fprintf(tw, "%s\t", name)
		for _, t := range scaled {
			cell := "n/a"
			for _, op := range t.Scale.Ops {
				if op.Name == name {
					cell = number(float64(op.Slowest.Micros))
				}
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range scaled {
		if t.Scale.Note != "" {
			fmt.Fprintf(w, "  %s: %s\n", t.Name, t.Scale.Note)
			continue
		}
		fmt.Fprintf(w, "  %s: slowest %sµs in %s: %s; filled in %.0fs; TopicNames listed %d\n", t.Name,
			number(float64(t.Scale.Slowest.Micros)), t.Scale.Slowest.Op, strings.Join(t.Scale.Slowest.Command, " "),
			t.Scale.FillSeconds, t.Scale.TopicsFound)
	}
	return nil
}

// writeGoals prints each goal with each relq backend's figure and whether it met it.
func (r *Report) writeGoals(w io.Writer) error {
	goals := r.Goals
	if goals == nil {
		goals = r.judge()
	}
	if len(goals) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	if rounds := max(r.Config.Rounds, len(r.RoundOrders)); rounds > 1 {
		fmt.Fprintf(w, "targets (read, not asserted): judged on the median of %d rounds, met only if the median meets the target;\n", rounds)
		fmt.Fprintln(w, "  (lo–hi) is the spread of the per-round figures, so a range across the target means the verdict could go either way")
	} else {
		fmt.Fprintln(w, "targets (read, not asserted: one run on a shared machine is noisy)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprint(tw, "figure\ttarget\t")
	for _, res := range goals[0].Results {
		fmt.Fprintf(tw, "%s\t", res.Backend)
	}
	fmt.Fprintln(tw)
	for _, g := range goals {
		fmt.Fprintf(tw, "%s\t%s\t", g.Name, g.Target)
		for _, res := range g.Results {
			verdict := "n/a"
			if res.Met != nil {
				verdict = map[bool]string{true: "met", false: "MISSED"}[*res.Met]
			}
			fmt.Fprintf(tw, "%s: %s\t", verdict, res.Shown)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
