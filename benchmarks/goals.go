package benchmarks

import "fmt"

// Goal is one of the project's performance targets, judged for each relq backend. Figures
// move with the machine, so a goal is read, never asserted. A goal on a figure measured in
// rounds is judged on the median over the rounds (for a ratio, the median of the per-round
// ratios): it is met only if that median meets the target, whatever single rounds did.
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
	// Met is nil when the goal could not be judged (no baseline, reference or figure). It
	// is judged on Value alone, the median for a figure measured in rounds.
	Met *bool `json:"met"`
	// Spread is Value's per-round spread (Median is Value), for a goal on a figure measured
	// in rounds; nil otherwise.
	Spread *Spread `json:"spread,omitempty"`
}

// judgement is one backend's standing on a goal, as a goalSpec computes it.
type judgement struct {
	value float64
	shown string
	met   bool
	// ok is false when the goal could not be judged.
	ok bool
	// spread is value's per-round spread, for a figure measured in rounds.
	spread *Spread
}

// goalSpec judges one goal on a target, given the baseline (nil if none) and the report.
type goalSpec struct {
	name, target string
	judge        func(r *Report, t, base *TargetReport) judgement
}

// spreadNote is "0.58–0.70; " for a spread over more than one round, else "".
func spreadNote(s Spread, format string) string {
	if len(s.Rounds) < 2 {
		return ""
	}
	return fmt.Sprintf(format+"–"+format+"; ", s.Low, s.High)
}

// ratioGoal compares t's figure over base's with bound: at most bound when lowerIsBetter,
// else at least bound. With per-round values (rounds), the ratio is the median of the
// per-round ratios (ratioOf) and the verdict is the median's.
func ratioGoal(name, target, unit string, bound float64, lowerIsBetter bool, get func(*TargetReport) float64,
	rounds func(*TargetReport) []float64) goalSpec {
	getOK := func(t *TargetReport) (float64, bool) { return get(t), true }
	return goalSpec{name: name, target: target, judge: func(_ *Report, t, base *TargetReport) judgement {
		if base == nil || get(base) <= 0 {
			return judgement{shown: "no baseline"}
		}
		s, ok := ratioOf(t, base, getOK, rounds)
		if !ok {
			return judgement{shown: "no ratio"}
		}
		met := s.Median >= bound
		if lowerIsBetter {
			met = s.Median <= bound
		}
		shown := fmt.Sprintf("×%.2f (%s%s vs %s %s)", s.Median, spreadNote(s, "%.2f"), number(get(t)), number(get(base)), unit)
		return judgement{value: s.Median, shown: shown, met: met, ok: true, spread: &s}
	}}
}

// absoluteGoal compares get(t) with an upper bound.
func absoluteGoal(name, target, unit string, bound float64, get func(*TargetReport) (float64, bool)) goalSpec {
	return goalSpec{name: name, target: target, judge: func(_ *Report, t, _ *TargetReport) judgement {
		v, ok := get(t)
		if !ok {
			return judgement{shown: "not measured"}
		}
		return judgement{value: v, shown: number(v) + " " + unit, met: v <= bound, ok: true}
	}}
}

// referenceGoal compares t's batched publish rate with a share of the reference: each
// round's rate over the reference (the median of its runs before and after the rounds),
// judged on the median.
func referenceGoal(name, target string, share float64) goalSpec {
	return goalSpec{name: name, target: target, judge: func(r *Report, t, _ *TargetReport) judgement {
		if r.Reference.LPUSHPerSec == nil || *r.Reference.LPUSHPerSec <= 0 {
			return judgement{shown: "no reference"}
		}
		ref := *r.Reference.LPUSHPerSec
		rates := t.Rounds[RoundPublishBatch].PerSec
		if len(rates) == 0 {
			rates = []float64{t.PublishBatchPerSec}
		}
		shares := make([]float64, len(rates))
		for i, v := range rates {
			shares[i] = 100 * v / ref
		}
		s, _ := spreadOf(shares)
		shown := fmt.Sprintf("%.0f%% (%s%s vs %s msg/s)", s.Median, spreadNote(s, "%.0f%%"), number(t.PublishBatchPerSec), number(ref))
		for i := range s.Rounds {
			s.Rounds[i] /= 100
		}
		s.Median, s.Low, s.High = s.Median/100, s.Low/100, s.High/100
		return judgement{value: s.Median, shown: shown, met: s.Median >= share, ok: true, spread: &s}
	}}
}

func goalSpecs(r *Report) []goalSpec {
	cpu := func(f func(*TargetReport) RedisCost) func(*TargetReport) float64 {
		return func(t *TargetReport) float64 { return f(t).CPUMicrosPerMessage }
	}
	return []goalSpec{
		ratioGoal("consume+ack: Redis CPU per message", "≤ 1/3 of redisstream's", "µs", 1.0/3, true,
			cpu(func(t *TargetReport) RedisCost { return t.Consume.Redis }), cpuRounds(RoundConsume)),
		ratioGoal("publish, 1 per call: Redis CPU per message", "≤ 1.5× redisstream's", "µs", 1.5, true,
			cpu(func(t *TargetReport) RedisCost { return t.PublishSingleRedis }), cpuRounds(RoundPublishSingle)),
		ratioGoal("publish, 1 per call: rate", "≥ 0.8× redisstream's", "msg/s", 0.8, false,
			func(t *TargetReport) float64 { return t.PublishSinglePerSec }, perSecRounds(RoundPublishSingle)),
		ratioGoal(fmt.Sprintf("publish, 1 per call, %d goroutines: rate", r.Config.PublishGoroutines), "≥ 3× redisstream's", "msg/s", 3, false,
			func(t *TargetReport) float64 { return t.PublishConcurrent.PerSec }, perSecRounds(RoundPublishConcurrent)),
		referenceGoal(fmt.Sprintf("publish, %d per call: rate", r.Config.BatchSize), "≥ 50% of redis-benchmark -P 16 LPUSH", 0.5),
		absoluteGoal(fmt.Sprintf("memory per queued %d-byte message", r.Config.PayloadBytes), "≤ 200 bytes", "bytes", 200,
			func(t *TargetReport) (float64, bool) { return t.MemoryBytesPerMessage, true }),
		{name: "idle subscriber: commands sent and run", target: "≤ 5/s each",
			judge: func(_ *Report, t, _ *TargetReport) judgement {
				v := max(t.Idle.SentPerSec, t.Idle.RedisPerSec)
				return judgement{value: v, shown: fmt.Sprintf("sent %s, ran %s /s", number(t.Idle.SentPerSec), number(t.Idle.RedisPerSec)),
					met: v <= 5, ok: true}
			}},
		absoluteGoal("recovery past the lease", "≤ 300 ms", "ms", 300,
			func(t *TargetReport) (float64, bool) { return t.Recovery.AfterLeaseMS, true }),
		{name: "slowest Redis call at scale", target: "≤ 5 ms",
			judge: func(_ *Report, t, _ *TargetReport) judgement {
				if t.Scale == nil || t.Scale.Slowest.Command == nil {
					return judgement{shown: "not measured"}
				}
				v := float64(t.Scale.Slowest.Micros) / 1000
				return judgement{value: v, shown: fmt.Sprintf("%s ms (%s)", number(v), t.Scale.Slowest.Op), met: v <= 5, ok: true}
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
			j := spec.judge(r, t, base)
			res := GoalResult{Backend: t.Name, Value: j.value, Shown: j.shown, Spread: j.spread}
			if j.ok {
				res.Met = &j.met
			}
			g.Results = append(g.Results, res)
		}
		goals = append(goals, g)
	}
	return goals
}
