package list

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
	require.Empty(t, e.Keys("t"))

	_, err := New(e.C, Options{Prefix: "relq}"})
	adaptertest.RequirePrefixError(t, err)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	c := redistest.Shared(t).Client(t)
	b, err := New(c, Options{})
	require.NoError(t, err)
	require.Equal(t, Options{Prefix: PrefixDefault, BatchSize: BatchSizeDefault,
		BacklogLimit: backend.BacklogLimitDefault, BacklogTTL: backend.BacklogTTLDefault,
		TombstoneTTL: backend.TombstoneTTLDefault, BacklogFull: backend.BacklogDropOldest}, Options{}.WithDefaults())
	require.Equal(t, BatchSizeDefault, b.e.BatchSize())
	require.Equal(t, "{"+PrefixDefault+":t}:meta", b.keys("t", "g").Meta(), "keys start with the default prefix")
	require.Equal(t, "list", b.Name())
	require.Equal(t, backend.Capabilities{FIFO: true, PendingOrphans: true, OnTimeDelay: true}, b.Capabilities())

	_, err = New(c, Options{BatchSize: -1})
	var ce *backend.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "BatchSize", ce.Field)
	_, err = New(c, Options{BacklogLimit: -1})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "BacklogLimit", ce.Field)
	_, err = New(c, Options{BacklogTTL: -time.Second})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "BacklogTTL", ce.Field)
	_, err = New(nil, Options{})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
}
