package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/internal/seal"
	"github.com/stretchr/testify/require"
)

func TestNamesThatWouldBreakTheHashTagAreRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	adaptertest.RejectsInvalidNames(t, e.b, seal.Open(e.b))
	_, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c:1", Count: 1, Lease: time.Second})
	adaptertest.RequireNameError(t, err, "consumer") // it names the consumer's own wake-up key
	require.Empty(t, e.Keys("t"))

	_, err = New(e.C, Options{Prefix: "relq}"})
	adaptertest.RequirePrefixError(t, err)
}

func TestOptionsAndCapabilities(t *testing.T) {
	t.Parallel()
	c := redistest.Shared(t).Client(t)
	b, err := New(c, Options{})
	require.NoError(t, err)
	require.Equal(t, Options{Prefix: PrefixDefault, BatchSize: BatchSizeDefault,
		BacklogLimit: backend.BacklogLimitDefault, BacklogTTL: backend.BacklogTTLDefault,
		TombstoneTTL: backend.TombstoneTTLDefault, BacklogFull: backend.BacklogDropOldest}, Options{}.WithDefaults())
	require.Equal(t, BatchSizeDefault, b.e.BatchSize())
	require.Equal(t, "{"+PrefixDefault+":t}:g:g:ready", b.e.Keys("t", "g").Store("ready"), "keys start with the default prefix")
	require.Equal(t, "zset", b.Name())
	require.Equal(t, backend.Capabilities{FIFO: true, Priorities: true, NativeDelay: true, OnTimeDelay: true, DueOrder: true},
		b.Capabilities())

	_, err = New(c, Options{BatchSize: -1})
	var ce *backend.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "BatchSize", ce.Field)
	_, err = New(nil, Options{})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
}

func TestPrioritiesAreClamped(t *testing.T) {
	t.Parallel()
	require.Equal(t, 7, rankDigits)
	for p, want := range map[int]int{0: 0, -5: -5, PriorityMax: PriorityMax, PriorityMax + 1: PriorityMax,
		PriorityMin - 1: PriorityMin, 1 << 40: PriorityMax, -1 << 40: PriorityMin} {
		require.Equal(t, want, clampPriority(p), "%d", p)
	}
}
