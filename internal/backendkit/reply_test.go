package backendkit

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

func TestMillisRoundsUpAndNeverTurnsAPositiveDurationToZero(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]int64{
		-time.Second: 0, 0: 0, time.Nanosecond: 1, time.Millisecond: 1, 1500 * time.Microsecond: 2, time.Hour: 3_600_000,
		backend.MaxDelay: backend.MaxDelay.Milliseconds(),
		// The largest Duration rounds up without overflowing into a negative (past) delay.
		math.MaxInt64: math.MaxInt64/int64(time.Millisecond) + 1,
	} {
		require.Equal(t, want, Millis(d), "%v", d)
	}
}

func TestIntReadsIntegersAndIntegerStrings(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(7), Int(int64(7)))
	require.Equal(t, int64(-3), Int("-3"))
	require.Zero(t, Int("x"))
	require.Zero(t, Int(nil))
	n, err := Ints([]any{int64(1), "2", nil}, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 0}, n)
	boom := errors.New("boom")
	_, err = Ints(nil, boom)
	require.ErrorIs(t, err, boom)
}

func TestHeldArgsFollowTheHead(t *testing.T) {
	t.Parallel()
	require.Equal(t, []any{"c", "1", 2, "5", 1},
		HeldArgs([]any{"c"}, []backend.Held{{ID: "1", Attempt: 2}, {ID: "5", Attempt: 1}}))
}

func TestUndecodableDeliveryNamesItsIDAndTopic(t *testing.T) {
	t.Parallel()
	good := string(backend.EncodeEnvelope(backend.Envelope{UUID: "u", Payload: []byte("p")}))
	ds := DecodeDeliveries([]any{"1", int64(2), "junk", "3", "1", good}, "t", "list: delivery", DecodeEnvelope)
	require.Len(t, ds, 2)
	require.ErrorIs(t, ds[0].Err, backend.ErrCorruptEntry)
	require.ErrorContains(t, ds[0].Err, `list: delivery 1 of topic "t": `)
	require.Equal(t, 2, ds[0].Attempt)
	require.NoError(t, ds[1].Err)
	require.Equal(t, "3", ds[1].ID)
	require.Equal(t, 1, ds[1].Attempt)
	require.Equal(t, "p", string(ds[1].Envelope.Payload))
}
