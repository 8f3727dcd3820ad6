package pubsub

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/components/delay"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
)

// TestWatermillDelay checks the arithmetic on Watermill's two delay keys with a fixed clock;
// the publish test checks the same end to end on Redis.
func TestWatermillDelay(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 600_000_000, time.UTC) // .6s into a second
	msg := func(until, forDur string) *message.Message {
		m := message.NewMessage("u", nil)
		if until != "" {
			m.Metadata.Set(WatermillDelayedUntil, until)
		}
		if forDur != "" {
			m.Metadata.Set(WatermillDelayedFor, forDur)
		}
		return m
	}
	cases := []struct {
		name        string
		until, forD string
		want        time.Duration
	}{
		{name: "none", want: 0},
		{name: "for only", forD: "1.5s", want: 1500 * time.Millisecond},
		{name: "until only, whole seconds", until: "2025-01-02T03:04:07Z", want: 1400 * time.Millisecond},
		// delay.For(1.5s) at now: until = 03:04:07.1 truncated to :07, for = 1.5s.
		{name: "both, published at once", until: "2025-01-02T03:04:07Z", forD: "1.5s", want: 1500 * time.Millisecond},
		// The same message published 10s later: until rules, no second delay.
		{name: "both, published late", until: "2025-01-02T03:03:57Z", forD: "1.5s", want: 0},
		{name: "both, published slightly late", until: "2025-01-02T03:04:05Z", forD: "1.5s", want: 400 * time.Millisecond},
		{name: "negative for", forD: "-3s", want: 0},
		{name: "until in another zone", until: "2025-01-02T04:04:07+01:00", want: 1400 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := watermillDelay(msg(tc.until, tc.forD), now)
			require.NoError(t, err)
			require.Equal(t, tc.want, d)
		})
	}

	// What components/delay writes parses back: 90s from the moment delay.For read the clock,
	// which is at most since before it was called.
	m := message.NewMessage("u", nil)
	before := time.Now()
	delay.Message(m, delay.For(90*time.Second))
	parsed := time.Now()
	d, err := watermillDelay(m, parsed)
	require.NoError(t, err)
	require.LessOrEqual(t, d, 90*time.Second)
	require.GreaterOrEqual(t, d, 90*time.Second-parsed.Sub(before))
}
