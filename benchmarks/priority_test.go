package benchmarks_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/benchmarks"
)

// BenchmarkPriorityPickup measures the priority pickup at full size (a backlog of
// PriorityBacklogDefault, 100,000): seconds, not minutes, so the figure the docs quote can be
// run alone. It reports, never asserts.
//
//	go test -run '^$' -bench PriorityPickup -benchtime 1x ./benchmarks/
func BenchmarkPriorityPickup(b *testing.B) {
	forTargets(b, func(b *testing.B, c *redis.Client, t benchmarks.Target, cfg benchmarks.Config) {
		cfg.PriorityBacklog = benchmarks.PriorityBacklogDefault
		p, err := benchmarks.MeasurePriorityPickup(context.Background(), c, t, cfg)
		if errors.Is(err, benchmarks.ErrNoPriorities) {
			b.Skip("no priorities")
		}
		require.NoError(b, err)
		b.ReportMetric(p.DueNow.MS, "due-now-ms")
		b.ReportMetric(float64(p.DueNow.Before), "due-now-before")
		b.ReportMetric(p.Delayed.MS, "delayed-late-ms")
		b.ReportMetric(float64(p.Delayed.Before), "delayed-before")
		b.ReportMetric(p.DelayedBacklog.MS, "after-delayed-backlog-ms")
		b.ReportMetric(float64(p.DelayedBacklog.Before), "after-delayed-backlog-before")
	})
}

// TestTableShowsPriorityPickup: the table prints the priority pickup of the backends that
// measured it, and nothing of it for the others.
func TestTableShowsPriorityPickup(t *testing.T) {
	rep := &benchmarks.Report{
		Server: "test", Config: benchmarks.QuickConfig().WithDefaults(),
		Targets: []benchmarks.TargetReport{
			{Name: "list"},
			{Name: "zset", Priority: &benchmarks.PriorityPickup{Backlog: 100_000,
				DueNow:         benchmarks.Pickup{MS: 0.25, Before: 12},
				Delayed:        benchmarks.Pickup{MS: 3.5, Before: 0},
				DelayedBacklog: benchmarks.Pickup{MS: 330, Before: 1200}}},
			{Name: benchmarks.BaselineName, Baseline: true},
		},
	}
	var out bytes.Buffer
	require.NoError(t, rep.WriteTable(&out))
	for _, want := range []string{
		"priority pickup, zset: one message of priority 10 behind 100,000 due ones of priority 0",
		"due now, published while it consumes: 0.25 ms after Publish returned; 12 of the backlog went before it",
		"delayed 200ms, published while it consumes: 3.50 ms after its due time; 0 of the backlog went before it",
		"no consumer until all were due: 330 ms after Subscribe; 1,200 of the backlog went before it",
	} {
		require.Contains(t, out.String(), want)
	}
	require.NotContains(t, out.String(), "priority pickup, list")
}
