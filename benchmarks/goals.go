package benchmarks

import "fmt"

// Goal is one of the project's performance targets, judged for each relq backend. Figures
// move with the machine, so a goal is read, never asserted.
type Goal struct {
	// Name says what is measured; Target what it should be.
	Name   string `json:"name"`
	Target string `json:"target"`
	// Results are the relq backends', in report order.
	Results []GoalResult `json:"results"`
}

// GoalResult is one backend's standing on a goal.
type GoalResult struct {
	Backend string `json:"backend"`
	// Value is the figure compared with the target: a ratio to the baseline, a share of the
	// reference, or an absolute figure, as the goal's Target says.
	Value float64 `json:"value"`
	// Shown is Value for people, with the figures it comes from.
	Shown string `json:"shown"`
	// Met is nil when the goal could not be judged (no baseline, reference or figure).
	Met *bool `json:"met"`
}

// goalSpec judges one goal on a target, given the baseline (nil if none) and the report.
type goalSpec struct {
	name, target string
	judge        func(r *Report, t, base *TargetReport) (value float64, shown string, met, ok bool)
}

// ratioGoal compares get(t)/get(base) with bound: at most bound when lowerIsBetter, else at
// least bound.
func ratioGoal(name, target, unit string, bound float64, lowerIsBetter bool, get func(*TargetReport) float64) goalSpec {
	return goalSpec{name: name, target: target, judge: func(_ *Report, t, base *TargetReport) (float64, string, bool, bool) {
		if base == nil || get(base) <= 0 {
			return 0, "no baseline", false, false
		}
		v := get(t) / get(base)
		met := v >= bound
		if lowerIsBetter {
			met = v <= bound
		}
		return v, fmt.Sprintf("×%.2f (%s vs %s %s)", v, number(get(t)), number(get(base)), unit), met, true
	}}
}

// absoluteGoal compares get(t) with an upper bound.
func absoluteGoal(name, target, unit string, bound float64, get func(*TargetReport) (float64, bool)) goalSpec {
	return goalSpec{name: name, target: target, judge: func(_ *Report, t, _ *TargetReport) (float64, string, bool, bool) {
		v, ok := get(t)
		if !ok {
			return 0, "not measured", false, false
		}
		return v, number(v) + " " + unit, v <= bound, true
	}}
}

func goalSpecs(r *Report) []goalSpec {
	cpu := func(f func(*TargetReport) RedisCost) func(*TargetReport) float64 {
		return func(t *TargetReport) float64 { return f(t).CPUMicrosPerMessage }
	}
	return []goalSpec{
		ratioGoal("consume+ack: Redis CPU per message", "≤ 1/3 of redisstream's", "µs", 1.0/3, true,
			cpu(func(t *TargetReport) RedisCost { return t.Consume.Redis })),
		ratioGoal("publish, 1 per call: Redis CPU per message", "≤ 1.5× redisstream's", "µs", 1.5, true,
			cpu(func(t *TargetReport) RedisCost { return t.PublishSingleRedis })),
		ratioGoal("publish, 1 per call: rate", "≥ 0.8× redisstream's", "msg/s", 0.8, false,
			func(t *TargetReport) float64 { return t.PublishSinglePerSec }),
		ratioGoal(fmt.Sprintf("publish, 1 per call, %d goroutines: rate", r.Config.PublishGoroutines), "≥ 3× redisstream's", "msg/s", 3, false,
			func(t *TargetReport) float64 { return t.PublishConcurrent.PerSec }),
		{name: fmt.Sprintf("publish, %d per call: rate", r.Config.BatchSize), target: "≥ 50% of redis-benchmark -P 16 LPUSH",
			judge: func(r *Report, t, _ *TargetReport) (float64, string, bool, bool) {
				if r.Reference.LPUSHPerSec == nil || *r.Reference.LPUSHPerSec <= 0 {
					return 0, "no reference", false, false
				}
				v := t.PublishBatchPerSec / *r.Reference.LPUSHPerSec
				return v, fmt.Sprintf("%.0f%% (%s vs %s msg/s)", 100*v, number(t.PublishBatchPerSec), number(*r.Reference.LPUSHPerSec)), v >= 0.5, true
			}},
		absoluteGoal(fmt.Sprintf("memory per queued %d-byte message", r.Config.PayloadBytes), "≤ 200 bytes", "bytes", 200,
			func(t *TargetReport) (float64, bool) { return t.MemoryBytesPerMessage, true }),
		{name: "idle subscriber: commands sent and run", target: "≤ 5/s each",
			judge: func(_ *Report, t, _ *TargetReport) (float64, string, bool, bool) {
				v := max(t.Idle.SentPerSec, t.Idle.RedisPerSec)
				return v, fmt.Sprintf("sent %s, ran %s /s", number(t.Idle.SentPerSec), number(t.Idle.RedisPerSec)), v <= 5, true
			}},
		absoluteGoal("recovery past the lease", "≤ 300 ms", "ms", 300,
			func(t *TargetReport) (float64, bool) { return t.Recovery.AfterLeaseMS, true }),
		{name: "slowest Redis call at scale", target: "≤ 5 ms",
			judge: func(_ *Report, t, _ *TargetReport) (float64, string, bool, bool) {
				if t.Scale == nil || t.Scale.Slowest.Command == nil {
					return 0, "not measured", false, false
				}
				v := float64(t.Scale.Slowest.Micros) / 1000
				return v, fmt.Sprintf("%s ms (%s)", number(v), t.Scale.Slowest.Op), v <= 5, true
			}},
	}
}

// judge judges every goal for each relq backend of the report.
func (r *Report) judge() []Goal {
	base := r.baseline()
	var goals []Goal
	for _, spec := range goalSpecs(r) {
		g := Goal{Name: spec.name, Target: spec.target}
		for i := range r.Targets {
			t := &r.Targets[i]
			if t.Baseline {
				continue
			}
			v, shown, met, ok := spec.judge(r, t, base)
			res := GoalResult{Backend: t.Name, Value: v, Shown: shown}
			if ok {
				res.Met = &met
			}
			g.Results = append(g.Results, res)
		}
		goals = append(goals, g)
	}
	return goals
}
