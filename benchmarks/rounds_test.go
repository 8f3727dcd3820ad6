package benchmarks

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMedian: the middle value of an odd count, the mean of the two middle ones of an even
// count, 0 of none; the input is not reordered.
func TestMedian(t *testing.T) {
	t.Parallel()
	in := []float64{30, 10, 20}
	require.Equal(t, 20.0, median(in))
	require.Equal(t, []float64{30, 10, 20}, in, "median must not sort its input")
	require.Equal(t, 25.0, median([]float64{40, 10, 30, 20}))
	require.Equal(t, 7.0, median([]float64{7}))
	require.Equal(t, 0.0, median(nil))
}

// TestMedianRatioPairsRounds: round i of the target is divided by round i of the baseline,
// and the report is the median of those ratios with their lowest and highest.
func TestMedianRatioPairsRounds(t *testing.T) {
	t.Parallel()
	relq := []float64{14_000, 18_000, 16_000}
	base := []float64{20_000, 30_000, 25_000}
	s, ok := medianRatio(relq, base)
	require.True(t, ok)
	require.InDelta(t, 0.64, s.Median, 1e-9)
	require.InDelta(t, 0.60, s.Low, 1e-9)
	require.InDelta(t, 0.70, s.High, 1e-9)
	require.InDeltaSlice(t, []float64{0.70, 0.60, 0.64}, s.Rounds, 1e-9, "in round order")

	// The machine at 0.7 of its speed in round 3 (both slowed), and the baseline alone at
	// half speed in round 2: that moves one per-round ratio, which the median drops, where
	// the ratio of the medians would move by 1/0.7 (the baseline's median falls from 10,000
	// to 7,000).
	relq = []float64{5_000, 5_000, 3_500}
	base = []float64{10_000, 5_000, 7_000}
	s, ok = medianRatio(relq, base)
	require.True(t, ok)
	require.InDelta(t, 0.5, s.Median, 1e-9)
	require.InDelta(t, 0.5, s.Low, 1e-9)
	require.InDelta(t, 1.0, s.High, 1e-9)
	require.InDelta(t, 5_000.0/7_000, median(relq)/median(base), 1e-9)

	// Rounds the baseline has no positive figure for are left out; unequal lengths pair
	// what both have.
	s, ok = medianRatio([]float64{1, 2, 3, 4}, []float64{2, 0, 6})
	require.True(t, ok)
	require.InDeltaSlice(t, []float64{0.5, 0.5}, s.Rounds, 1e-9)
	require.InDelta(t, 0.5, s.Median, 1e-9)
	_, ok = medianRatio([]float64{1}, []float64{0})
	require.False(t, ok)
	_, ok = medianRatio(nil, nil)
	require.False(t, ok)
}

// TestMedianCostIsFieldByField: each figure of the cost is the median of its rounds, a
// command missing from a round counting as 0 there; main-thread CPU only when every round
// has it.
func TestMedianCostIsFieldByField(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	costs := []RedisCost{
		{Messages: 100, CPUMicrosPerMessage: 30, MainThreadCPUMicrosPerMessage: f(20), CommandsPerMessage: 2,
			ByCommand: map[string]CommandCost{"evalsha": {Calls: 1, Micros: 25}, "hello": {Calls: 0.01, Micros: 1}}},
		{Messages: 100, CPUMicrosPerMessage: 10, MainThreadCPUMicrosPerMessage: f(8), CommandsPerMessage: 2,
			ByCommand: map[string]CommandCost{"evalsha": {Calls: 1, Micros: 9}}},
		{Messages: 100, CPUMicrosPerMessage: 20, MainThreadCPUMicrosPerMessage: f(15), CommandsPerMessage: 3,
			ByCommand: map[string]CommandCost{"evalsha": {Calls: 1, Micros: 18}, "hello": {Calls: 0.02, Micros: 2}}},
	}
	m := medianCost(costs)
	require.Equal(t, 100, m.Messages)
	require.Equal(t, 20.0, m.CPUMicrosPerMessage)
	require.NotNil(t, m.MainThreadCPUMicrosPerMessage)
	require.Equal(t, 15.0, *m.MainThreadCPUMicrosPerMessage)
	require.Equal(t, 2.0, m.CommandsPerMessage)
	require.Equal(t, CommandCost{Calls: 1, Micros: 18}, m.ByCommand["evalsha"])
	require.Equal(t, CommandCost{Calls: 0.01, Micros: 1}, m.ByCommand["hello"])

	costs[1].MainThreadCPUMicrosPerMessage = nil
	require.Nil(t, medianCost(costs).MainThreadCPUMicrosPerMessage)
	require.Equal(t, RedisCost{}, medianCost(nil))
}

// TestRoundOrderRotates: over as many rounds as targets, every target takes every place.
func TestRoundOrderRotates(t *testing.T) {
	t.Parallel()
	require.Equal(t, []int{0, 1, 2, 3}, roundOrder(4, 0))
	require.Equal(t, []int{1, 2, 3, 0}, roundOrder(4, 1))
	require.Equal(t, []int{2, 3, 0, 1}, roundOrder(4, 2))
	places := map[[2]int]bool{}
	for r := range 4 {
		for place, target := range roundOrder(4, r) {
			places[[2]int{target, place}] = true
		}
	}
	require.Len(t, places, 16)
}

// TestCombineReferencesTakesTheMedianOfTheRuns: two runs give their mean, a run that did
// not happen is left out, and none gives no rate and the note.
func TestCombineReferencesTakesTheMedianOfTheRuns(t *testing.T) {
	t.Parallel()
	rate := func(v float64) Reference {
		return Reference{LPUSHPerSec: &v, Runs: []float64{v}, Command: "redis-benchmark"}
	}
	ref := combineReferences(rate(1_200_000), rate(800_000))
	require.NotNil(t, ref.LPUSHPerSec)
	require.Equal(t, 1_000_000.0, *ref.LPUSHPerSec)
	require.Equal(t, []float64{1_200_000, 800_000}, ref.Runs)
	require.Equal(t, "redis-benchmark", ref.Command)

	ref = combineReferences(rate(900_000), Reference{Note: "key exists"})
	require.Equal(t, 900_000.0, *ref.LPUSHPerSec)
	require.Equal(t, "key exists", ref.Note)

	ref = combineReferences(Reference{Note: "not found"}, Reference{Note: "not found"})
	require.Nil(t, ref.LPUSHPerSec)
	require.Equal(t, "not found", ref.Note)
}

// TestTableShowsMediansAndRoundSpread: with three rounds, a ratio is the median of the
// per-round ratios with their lowest and highest next to it, the figure shown is the median,
// and a target is met only if the median meets it (list's single publish meets ≥ 0.8 in one
// round of three: MISSED). The batched-publish target uses the mean of the two reference runs.
func TestTableShowsMediansAndRoundSpread(t *testing.T) {
	t.Parallel()
	cfg := QuickConfig().WithDefaults()
	cfg.Rounds = 3
	pub := func(single, batch []float64) TargetReport {
		return TargetReport{
			PublishSinglePerSec: single[1], PublishBatchPerSec: batch[1],
			Rounds: map[string]RoundValues{
				RoundPublishSingle: {PerSec: single},
				RoundPublishBatch:  {PerSec: batch},
			},
		}
	}
	list := pub([]float64{18_000, 14_000, 16_000}, []float64{500_000, 600_000, 700_000})
	list.Name = "list"
	// Medians: 16,000 and 600,000 (the second value is the median in both).
	list.PublishSinglePerSec, list.PublishBatchPerSec = 16_000, 600_000
	base := pub([]float64{20_000, 25_000, 17_000}, []float64{40_000, 50_000, 45_000})
	base.Name, base.Baseline = BaselineName, true
	base.PublishSinglePerSec, base.PublishBatchPerSec = 20_000, 45_000
	rep := &Report{
		Server: "test", Config: cfg,
		Reference:   Reference{LPUSHPerSec: ptr(1_000_000), Runs: []float64{1_200_000, 800_000}},
		RoundOrders: [][]string{{"list", "redisstream"}, {"redisstream", "list"}, {"list", "redisstream"}},
		Targets:     []TargetReport{list, base},
	}
	var out bytes.Buffer
	require.NoError(t, rep.WriteTable(&out))
	table := out.String()
	// Per-round single-publish ratios: 0.90, 0.56, 0.94 → median 0.90; batched: 12.5, 12, 15.56.
	require.Regexp(t, `publish, 1 per call\|\s+msg/s\|\s+16,000 ×0\.90 \(0\.56–0\.94\)\|\s+20,000\|`, table)
	require.Regexp(t, `publish, 100 per call\|\s+msg/s\|\s+600,000 ×12\.50 \(12\.00–15\.56\) 60%ref\|`, table)
	require.Contains(t, table, "the median of 3 interleaved rounds")
	require.Contains(t, table, "reference: redis-benchmark LPUSH -P 16: 1,000,000/s, the mean of 1,200,000 before the rounds and 800,000 after them")
	require.Contains(t, table, "met only if the median meets the target")
	line := func(prefix string) string {
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q in\n%s", prefix, table)
		return ""
	}
	require.Contains(t, line("publish, 1 per call: rate "), "met: ×0.90 (0.56–0.94; 16,000 vs 20,000 msg/s)")
	require.Contains(t, line("publish, 100 per call: rate"), "met: 60% (50%–70%; 600,000 vs 1,000,000 msg/s)")

	// Met only on the median: single-publish ratios 0.85, 0.70, 0.75 meet ≥ 0.8 in one round.
	rep.Targets[0].Rounds[RoundPublishSingle] = RoundValues{PerSec: []float64{17_000, 17_500, 12_750}}
	rep.Targets[0].PublishSinglePerSec = 17_000
	out.Reset()
	require.NoError(t, rep.WriteTable(&out))
	var single *GoalResult
	for _, g := range rep.judge() {
		if g.Name == "publish, 1 per call: rate" {
			single = &g.Results[0]
		}
	}
	require.NotNil(t, single)
	require.InDelta(t, 0.75, single.Value, 1e-9)
	require.NotNil(t, single.Met)
	require.False(t, *single.Met)
	require.NotNil(t, single.Spread)
	require.InDeltaSlice(t, []float64{0.85, 0.70, 0.75}, single.Spread.Rounds, 1e-9)
	require.Contains(t, out.String(), "MISSED: ×0.75 (0.70–0.85; 17,000 vs 20,000 msg/s)")
}

func ptr(v float64) *float64 { return &v }
