package streams

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
	_, err = e.b.Ack(ctx, &pubsub.AckParams{Topic: "t", Group: "a:b", Consumer: "c"})
	requireName(err, "group")
	_, err = e.b.Stats(ctx, &pubsub.StatsParams{Topic: "", Group: "g"})
	requireName(err, "topic")
	_, err = e.b.Groups(ctx, "t*")
	requireName(err, "topic")
	_, err = e.b.CleanupConsumers(ctx, "t", "g:x", time.Second)
	requireName(err, "group")
	requireName(e.b.Faults().InjectCorrupt(ctx, "t", "{g", nil), "group")
	require.Empty(t, e.keys("t"))

	_, err = New(e.c, Options{Prefix: "relq}"})
	require.ErrorIs(t, err, pubsub.ErrInvalidName)
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)
	var ce *pubsub.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "Prefix", ce.Field)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	c := redistest.Shared(t).Client(t)
	b, err := New(c, Options{})
	require.NoError(t, err)
	require.Equal(t, Options{Prefix: PrefixDefault, Format: FormatNative, Retention: RetainUntilTrimmed,
		BatchSize: BatchSizeDefault, ConsumerIdleTimeout: ConsumerIdleTimeoutDefault}, b.opts)
	require.Equal(t, "streams", b.Name())
	require.Equal(t, pubsub.Capabilities{FIFO: true, NewGroupReplay: true, OnTimeDelay: true, DueOrder: true}, b.Capabilities())
	b, err = New(c, Options{ConsumerIdleTimeout: -5})
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), b.opts.ConsumerIdleTimeout)

	for field, o := range map[string]Options{
		"Format":    {Format: "json"},
		"Retention": {Retention: "forever"},
		"MaxLen":    {MaxLen: -1},
		"MaxAge":    {MaxLen: 10, MaxAge: time.Hour},
		"BatchSize": {BatchSize: -1},
	} {
		_, err = New(c, o)
		var ce *pubsub.ConfigError
		require.ErrorAs(t, err, &ce, field)
		require.Equal(t, field, ce.Field)
	}
	_, err = New(nil, Options{})
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)
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
