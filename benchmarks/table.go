package benchmarks

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
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
	// get returns the figure and whether the target has it.
	get func(*TargetReport) (float64, bool)
	// ofReference shows the figure as a share of redis-benchmark's LPUSH rate.
	ofReference bool
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
	rs := []row{
		{label: "publish, 1 per call", unit: "msg/s", get: always(func(t *TargetReport) float64 { return t.PublishSinglePerSec })},
		{label: fmt.Sprintf("publish, %d per call", r.Config.BatchSize), unit: "msg/s", ofReference: true,
			get: always(func(t *TargetReport) float64 { return t.PublishBatchPerSec })},
	}
	for _, n := range r.Config.EndToEndSubscribers {
		key := fmt.Sprint(n)
		rs = append(rs, row{label: fmt.Sprintf("end-to-end, %d subscriber(s)", n), unit: "msg/s",
			get: func(t *TargetReport) (float64, bool) { v, ok := t.EndToEndPerSec[key]; return v, ok }})
	}
	for _, n := range r.Config.EndToEndSubscribers {
		key := fmt.Sprint(n)
		rs = append(rs, row{label: fmt.Sprintf("e2e while publishing, %d sub(s)", n), unit: "msg/s",
			get: func(t *TargetReport) (float64, bool) { v, ok := t.EndToEndConcurrentPerSec[key]; return v, ok }})
	}
	return append(rs,
		row{label: "pickup latency p50", unit: "ms", get: always(func(t *TargetReport) float64 { return t.PickupLatencyMS.P50 })},
		row{label: "pickup latency p99", unit: "ms", get: always(func(t *TargetReport) float64 { return t.PickupLatencyMS.P99 })},
		row{label: "pickup latency max", unit: "ms", get: always(func(t *TargetReport) float64 { return t.PickupLatencyMS.Max })},
		row{label: "delay lateness p50", unit: "ms", get: late(func(l *Lateness) float64 { return l.Upper.P50 })},
		row{label: "delay lateness p99", unit: "ms", get: late(func(l *Lateness) float64 { return l.Upper.P99 })},
		row{label: "recovery after lease", unit: "ms", get: always(func(t *TargetReport) float64 { return t.Recovery.AfterLeaseMS })},
		row{label: "recovery total", unit: "ms", get: always(func(t *TargetReport) float64 { return t.Recovery.TotalMS })},
		row{label: "memory per queued message", unit: "bytes", get: always(func(t *TargetReport) float64 { return t.MemoryBytesPerMessage })},
		row{label: "idle: commands sent", unit: "cmd/s", get: always(func(t *TargetReport) float64 { return t.Idle.SentPerSec })},
		row{label: "idle: commands Redis ran", unit: "cmd/s", get: always(func(t *TargetReport) float64 { return t.Idle.RedisPerSec })},
	)
}

// number prints a figure with sensible precision.
func number(v float64) string {
	switch a := max(v, -v); {
	case a >= 1000:
		s := fmt.Sprintf("%.0f", v)
		// thousands separators
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		var b strings.Builder
		for i, ch := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(ch)
		}
		if neg {
			return "-" + b.String()
		}
		return b.String()
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
	if r.Reference.LPUSHPerSec != nil {
		fmt.Fprintf(w, "reference: redis-benchmark LPUSH -P 16: %s/s\n", number(*r.Reference.LPUSHPerSec))
	} else {
		fmt.Fprintf(w, "reference: %s\n", r.Reference.Note)
	}
	fmt.Fprintln(w, "(×N: the figure divided by redisstream's; higher is better for msg/s, lower for ms, bytes and cmd/s)")
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
				if !t.Baseline && bok && bv != 0 && v >= 0 && bv > 0 {
					cell += fmt.Sprintf(" (×%.2f)", v/bv)
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
	return nil
}
