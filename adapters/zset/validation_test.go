package zset

import (
	"errors"
	"testing"
	"time"

	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestNamesThatWouldBreakTheHashTagAreRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx
	requireName := func(err error, kind string) {
		t.Helper()
		require.ErrorIs(t, err, pubsub.ErrInvalidName)
		var ne *pubsub.NameError
		require.True(t, errors.As(err, &ne))
		require.Equal(t, kind, ne.Kind)
	}

	_, err := e.b.Publish(ctx, &pubsub.PublishParams{Topic: "a}{b", Messages: []pubsub.OutMessage{{Envelope: envelope("x")}}})
	requireName(err, "topic")
	requireName(e.b.EnsureGroup(ctx, &pubsub.EnsureGroupParams{Topic: "t", Group: "{g}"}), "group")
	_, err = e.b.Claim(ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c{1}", Count: 1, Lease: time.Second})
	requireName(err, "consumer")
	_, err = e.b.Claim(ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c:1", Count: 1, Lease: time.Second})
	requireName(err, "consumer") // it names the consumer's own wake-up key
	_, err = e.b.Ack(ctx, &pubsub.AckParams{Topic: "t", Group: "a:b", Consumer: "c"})
	requireName(err, "group")
	_, err = e.b.Stats(ctx, &pubsub.StatsParams{Topic: "", Group: "g"})
	requireName(err, "topic")
	_, err = e.b.Groups(ctx, "t*")
	requireName(err, "topic")
	requireName(e.b.Faults().InjectCorrupt(ctx, "t", "{g", nil), "group")
	require.Empty(t, e.keys("t"))

	_, err = New(e.c, Options{Prefix: "relq}"})
	require.ErrorIs(t, err, pubsub.ErrInvalidName)
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)
	var ce *pubsub.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "Prefix", ce.Field)
}

func TestOptionsAndCapabilities(t *testing.T) {
	t.Parallel()
	c := redistest.Shared(t).Client(t)
	b, err := New(c, Options{})
	require.NoError(t, err)
	require.Equal(t, Options{Prefix: PrefixDefault, BatchSize: BatchSizeDefault}, b.opts)
	require.Equal(t, "zset", b.Name())
	require.Equal(t, pubsub.Capabilities{FIFO: true, Priorities: true, NativeDelay: true, OnTimeDelay: true, DueOrder: true},
		b.Capabilities())

	_, err = New(c, Options{BatchSize: -1})
	var ce *pubsub.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "BatchSize", ce.Field)
	_, err = New(nil, Options{})
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)
}

func TestPrioritiesAreClamped(t *testing.T) {
	t.Parallel()
	require.Equal(t, 7, rankDigits)
	for p, want := range map[int]int{0: 0, -5: -5, PriorityMax: PriorityMax, PriorityMax + 1: PriorityMax,
		PriorityMin - 1: PriorityMin, 1 << 40: PriorityMax, -1 << 40: PriorityMin} {
		require.Equal(t, want, clampPriority(p), "%d", p)
	}
}

func TestRedisVersion(t *testing.T) {
	t.Parallel()
	for info, want := range map[string][3]int{
		"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n": {7, 0, 1},
		"redis_version:6.2.0\n":  {6, 2, 1},
		"redis_version:6.0.16\n": {6, 0, 1},
		"redis_version:x\n":      {0, 0, 0},
		"nothing here\n":         {0, 0, 0},
	} {
		major, minor, ok := redisVersion(info)
		got := [3]int{major, minor, 0}
		if ok {
			got[2] = 1
		}
		if want[2] == 0 {
			require.False(t, ok, info)
			continue
		}
		require.Equal(t, want, got, info)
	}
	b, err := New(redistest.Shared(t).Client(t), Options{})
	require.NoError(t, err)
	require.NoError(t, b.ready(t.Context()), "the test server is recent enough")
	require.True(t, b.versionOK.Load())
}
