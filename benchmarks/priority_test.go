package benchmarks_test

import (
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
