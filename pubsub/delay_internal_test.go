package pubsub

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// msDelay never turns a delay into a past due time: not by overflow past MaxDelay, and not
// by a negative count of milliseconds that wraps around into a positive one.
func TestMsDelay(t *testing.T) {
	t.Parallel()
	maxMs := MaxDelay.Milliseconds()
	for ms, want := range map[int64]time.Duration{
		math.MinInt64:               0,
		-math.MaxInt64:              0, // * time.Millisecond would wrap to +1ms
		-1:                          0,
		0:                           0,
		1:                           time.Millisecond,
		maxMs:                       MaxDelay,
		maxMs + 1:                   -1, // beyond
		math.MaxInt64 / 1_000_000:   -1,
		math.MaxInt64/1_000_000 + 1: -1,
		math.MaxInt64:               -1, // * time.Millisecond would wrap to -1ms
	} {
		d, ok := msDelay(ms)
		if want < 0 {
			require.False(t, ok, "%d ms is beyond MaxDelay", ms)
			continue
		}
		require.True(t, ok, "%d ms", ms)
		require.Equal(t, want, d, "%d ms", ms)
	}
}

// Watermill's keys beyond MaxDelay are reported with the key that set them, before any
// arithmetic that could overflow; at MaxDelay they give MaxDelay, never less than until.
func TestWatermillDelayBeyondMaxDelay(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	atMax := now.Add(MaxDelay).Truncate(time.Second) // whole seconds, as RFC 3339 keeps it
	cases := []struct {
		name, until, forD, key string
		want                   time.Duration
	}{
		{name: "until year 9999", until: "9999-12-31T23:59:59Z", key: WatermillDelayedUntil},
		{name: "until year 9999 with a short for", until: "9999-12-31T23:59:59Z", forD: "1s", key: WatermillDelayedUntil},
		{name: "until a second past MaxDelay", until: atMax.Add(time.Second).Format(time.RFC3339), key: WatermillDelayedUntil},
		{name: "for past MaxDelay", forD: (MaxDelay + time.Millisecond).String(), key: WatermillDelayedFor},
		{name: "for the largest Duration", forD: time.Duration(math.MaxInt64).String(), key: WatermillDelayedFor},
		{name: "until at MaxDelay", until: atMax.Format(time.RFC3339), want: atMax.Sub(now)},
		// until at MaxDelay with a for just longer: the narrowing stops at MaxDelay.
		{name: "until at MaxDelay, for beyond", until: atMax.Format(time.RFC3339), forD: (MaxDelay + time.Hour).String(), want: MaxDelay},
		{name: "for at MaxDelay", forD: MaxDelay.String(), want: MaxDelay},
		{name: "until year 1", until: "0001-01-01T00:00:00Z", forD: "1s", want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := message.NewMessage("u", nil)
			if tc.until != "" {
				m.Metadata.Set(WatermillDelayedUntil, tc.until)
			}
			if tc.forD != "" {
				m.Metadata.Set(WatermillDelayedFor, tc.forD)
			}
			d, err := watermillDelay(m, now)
			if tc.key == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, d)
				require.LessOrEqual(t, d, MaxDelay)
				return
			}
			require.ErrorIs(t, err, backend.ErrDelayTooLong)
			var de *backend.DelayError
			require.ErrorAs(t, err, &de)
			require.Equal(t, tc.key, de.Key)
			require.Equal(t, "u", de.UUID)
		})
	}
}

// outMessage applies the same rule to relq's own key, in its raw form and through SetDelay.
func TestOutMessageDelayBounds(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for raw, want := range map[string]time.Duration{
		"-9223372036854775807": 0,
		"0":                    0,
		strconv.FormatInt(MaxDelay.Milliseconds(), 10):   MaxDelay,
		strconv.FormatInt(MaxDelay.Milliseconds()+1, 10): -1,
		"9223372036854775807":                            -1,
	} {
		m := message.NewMessage(watermill.NewUUID(), nil)
		m.Metadata.Set(MetadataDelayMs, raw)
		out, _, err := outMessage(m, 0, now, "")
		if want < 0 {
			require.ErrorIs(t, err, backend.ErrDelayTooLong, raw)
			var de *backend.DelayError
			require.ErrorAs(t, err, &de)
			require.Equal(t, backend.DelayError{UUID: m.UUID, Key: MetadataDelayMs, Value: raw}, *de)
			continue
		}
		require.NoError(t, err, raw)
		require.Equal(t, want, out.Delay, raw)
	}
	m := message.NewMessage(watermill.NewUUID(), nil)
	SetDelay(m, MaxDelay+time.Millisecond)
	_, _, err := outMessage(m, 0, now, "")
	require.ErrorIs(t, err, backend.ErrDelayTooLong)
}
