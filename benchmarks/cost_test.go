package benchmarks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/benchmarks"
	"github.com/relq/relq/internal/redistest"
)

// target returns the named target.
func target(t *testing.T, name string) benchmarks.Target {
	t.Helper()
	for _, tg := range benchmarks.Targets() {
		if tg.Name == name {
			return tg
		}
	}
	t.Fatalf("no target %q", name)
	return benchmarks.Target{}
}

// TestPublishCostCountsEveryCommandButTheMeasuringOnes: the baseline's single publish is one
// XADD per message, so commandstats must show exactly that (the INFO calls of the meter left
// out); a relq publish is a script, whose EVALSHA and inner commands both count.
func TestPublishCostCountsEveryCommandButTheMeasuringOnes(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{}).Client(t)
	cfg := benchmarks.QuickConfig()

	base, err := benchmarks.MeasurePublish(context.Background(), c, target(t, benchmarks.BaselineName), cfg, 1)
	require.NoError(t, err)
	require.Equal(t, cfg.PublishMessages, base.Redis.Messages)
	require.Equal(t, 1.0, base.Redis.ByCommand["xadd"].Calls, "%+v", base.Redis.ByCommand)
	require.NotContains(t, base.Redis.ByCommand, "info")
	require.Greater(t, base.Redis.CPUMicrosPerMessage, 0.0)

	for _, name := range []string{"list", "zset", "streams"} {
		res, err := benchmarks.MeasurePublish(context.Background(), c, target(t, name), cfg, 1)
		require.NoError(t, err, name)
		calls := res.Redis.ByCommand["evalsha"].Calls + res.Redis.ByCommand["eval"].Calls
		require.GreaterOrEqual(t, calls, 1.0, "%s: one script per Publish call: %+v", name, res.Redis.ByCommand)
		require.Greater(t, res.Redis.CommandsPerMessage, calls, "%s: the script's own commands count too", name)
		require.Greater(t, res.Redis.CPUMicrosPerMessage, 0.0, name)
	}
}

// TestConsumeCostWaitsForEveryAck: the consume measurement's window holds every message's
// ack (redisstream: one XACK each).
func TestConsumeCostWaitsForEveryAck(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{}).Client(t)
	cfg := benchmarks.QuickConfig()
	res, err := benchmarks.MeasureConsume(context.Background(), c, target(t, benchmarks.BaselineName), cfg)
	require.NoError(t, err)
	require.Equal(t, 1.0, res.Redis.ByCommand["xack"].Calls, "%+v", res.Redis.ByCommand)
	require.GreaterOrEqual(t, res.Redis.ByCommand["xreadgroup"].Calls, 1.0)
	require.Greater(t, res.PerSec, 0.0)
}

// TestScaleReportsTheSlowestCallOfEachPath runs the scale phase at QuickConfig size on each
// relq backend: every path has a slowest call from SLOWLOG, Topics finds every topic, the
// SLOWLOG settings are put back and no key is left behind.
func TestScaleReportsTheSlowestCallOfEachPath(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{}).Client(t)
	ctx := context.Background()
	cfg := benchmarks.QuickConfig()
	before, err := c.ConfigGet(ctx, "slowlog-*").Result()
	require.NoError(t, err)

	_, err = benchmarks.MeasureScale(ctx, c, target(t, benchmarks.BaselineName), cfg)
	require.ErrorIs(t, err, benchmarks.ErrNoScale)
	for _, name := range []string{"list", "zset", "streams"} {
		rep, err := benchmarks.MeasureScale(ctx, c, target(t, name), cfg)
		require.NoError(t, err, name)
		require.Empty(t, rep.Note, name)
		require.Equal(t, cfg.ScaleTopics, rep.TopicsFound, name)
		paths := map[string]bool{}
		for _, op := range rep.Ops {
			paths[op.Name] = true
			require.Equal(t, cfg.ScaleRounds, op.Calls, "%s %s", name, op.Name)
			require.GreaterOrEqual(t, op.RedisCalls, op.Calls, "%s %s", name, op.Name)
			require.NotEmpty(t, op.Slowest.Command, "%s %s", name, op.Name)
		}
		for _, p := range []string{"claim 100", "ack 50", "nack 25", "nack 25 to dead letters", "extend 100", "reclaim",
			"stats", "dead letters, first page", "dead letters, last page", "requeue 100 dead letters",
			"purge 100 dead letters", "topics"} {
			require.True(t, paths[p], "%s: no %q in %v", name, p, paths)
		}
		require.NotEmpty(t, rep.Slowest.Op, name)
		require.NotEmpty(t, rep.Slowest.Command, name)
		require.Zero(t, c.DBSize(ctx).Val(), "%s left keys behind", name)
	}
	after, err := c.ConfigGet(ctx, "slowlog-*").Result()
	require.NoError(t, err)
	require.Equal(t, before, after)
}
