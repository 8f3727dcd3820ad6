package benchmarks_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/benchmarks"
)

// TestTableShowsCostsScaleAndTargets: the table prints the Redis cost rows, the scale section
// and the targets, and judges a target on the figures (consume+ack CPU: list at 1/4 of the
// baseline's meets "≤ 1/3", zset at 1/2 misses it; streams has no scale figures).
func TestTableShowsCostsScaleAndTargets(t *testing.T) {
	lpush := 1_000_000.0
	cost := func(cpu float64) benchmarks.RedisCost {
		return benchmarks.RedisCost{Messages: 1000, CPUMicrosPerMessage: cpu, CommandsPerMessage: 2,
			ByCommand: map[string]benchmarks.CommandCost{"evalsha": {Calls: 0.5, Micros: cpu}}}
	}
	scale := &benchmarks.ScaleReport{InFlight: 100, Delayed: 1000, DeadLetters: 100, Topics: 10, TopicsFound: 10,
		Ops:     []benchmarks.ScaleOp{{Name: "claim 100", Calls: 1, RedisCalls: 1, Slowest: benchmarks.SlowCall{Micros: 7000, Command: []string{"evalsha", "abc", "8", "k"}}}},
		Slowest: benchmarks.SlowCall{Op: "claim 100", Micros: 7000, Command: []string{"evalsha", "abc", "8", "k"}}}
	rep := &benchmarks.Report{
		Server: "test", Config: benchmarks.QuickConfig().WithDefaults(),
		Reference: benchmarks.Reference{LPUSHPerSec: &lpush},
		Targets: []benchmarks.TargetReport{
			{Name: "list", Consume: benchmarks.Throughput{PerSec: 10, Redis: cost(10)}, Scale: scale},
			{Name: "zset", Consume: benchmarks.Throughput{PerSec: 10, Redis: cost(20)}, Scale: scale},
			{Name: "streams", Consume: benchmarks.Throughput{PerSec: 10, Redis: cost(5)}},
			{Name: benchmarks.BaselineName, Baseline: true, Consume: benchmarks.Throughput{PerSec: 10, Redis: cost(40)}},
		},
	}
	var out bytes.Buffer
	require.NoError(t, rep.WriteTable(&out))
	table := out.String()
	for _, want := range []string{
		"publish, 1 per call, 16 goroutines", "Redis CPU: consume+ack, 4 subs × 8", "Redis cmds: publish, 1 per call",
		"slowest Redis call at scale", "Redis commands per message, consume+ack", "evalsha 0.50",
		"slowest 7,000µs in claim 100: evalsha abc 8 k",
	} {
		require.Contains(t, table, want)
	}
	line := func(prefix string) string {
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q in\n%s", prefix, table)
		return ""
	}
	require.Regexp(t, regexp.MustCompile(`met: ×0\.25 .*MISSED: ×0\.50 .*met: ×0\.12`), line("consume+ack: Redis CPU per message"))
	require.Regexp(t, regexp.MustCompile(`MISSED: 7\.00 ms \(claim 100\).*MISSED: 7\.00 ms \(claim 100\).*n/a: not measured`),
		line("slowest Redis call at scale  "))
}
