package streams

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
	_, err := New(e.C, Options{Prefix: "relq}"})
	adaptertest.RequirePrefixError(t, err)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	c := redistest.Shared(t).Client(t)
	b, err := New(c, Options{})
	require.NoError(t, err)
	require.Equal(t, Options{Prefix: PrefixDefault, Format: FormatNative, Retention: RetainUntilTrimmed,
		BatchSize:    BatchSizeDefault,
		BacklogLimit: backend.BacklogLimitDefault, BacklogTTL: backend.BacklogTTLDefault,
		TombstoneTTL: backend.TombstoneTTLDefault, BacklogFull: backend.BacklogDropOldest}, b.opts)
	require.Equal(t, "streams", b.Name())
	require.Equal(t, backend.Capabilities{FIFO: true, NewGroupReplay: true, OnTimeDelay: true, DueOrder: true}, b.Capabilities())
	b, err = New(c, Options{ConsumerIdleTimeout: -5})
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), b.opts.ConsumerIdleTimeout)

	for field, o := range map[string]Options{
		"Format":       {Format: "json"},
		"Retention":    {Retention: "forever"},
		"MaxLen":       {MaxLen: -1},
		"MaxAge":       {MaxLen: 10, MaxAge: time.Hour},
		"BatchSize":    {BatchSize: -1},
		"BacklogLimit": {BacklogLimit: -1},
		"BacklogTTL":   {BacklogTTL: -time.Second},
	} {
		_, err = New(c, o)
		var ce *backend.ConfigError
		require.ErrorAs(t, err, &ce, field)
		require.Equal(t, field, ce.Field)
	}
	_, err = New(nil, Options{})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
}
