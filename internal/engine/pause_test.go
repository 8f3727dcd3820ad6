package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// A paused group's claims return nothing, a blocking one after its Block and without an
// error, while publishes still store its messages and Stats shows the pause; after a resume
// the group gets every message. Both are idempotent.
func TestPauseStopsClaimsAndResumeRestoresThem(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "g")
			ensure(t, e, "t", "other")
			publish(t, e, "t", "a")
			require.NoError(t, e.PauseGroup(ctx, "t", "g"))
			require.NoError(t, e.PauseGroup(ctx, "t", "g"))
			publish(t, e, "t", "b")

			require.Empty(t, claim(t, e, "t", "g", "w", 10))
			start := time.Now()
			block := 100 * time.Millisecond
			ds, err := e.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "w", Count: 10, Lease: time.Minute, Block: block}, 0,
				func(_ context.Context, _ *backend.ClaimParams, _ int, _, _ time.Duration) ([]backend.Delivery, bool, error) {
					t.Error("a paused group's claim waits for nothing in Redis")
					return nil, false, nil
				})
			require.NoError(t, err)
			require.Empty(t, ds)
			require.GreaterOrEqual(t, time.Since(start), block, "a blocking claim sleeps out its Block")
			s := stats(t, e, "t", "g")
			require.True(t, s.Paused)
			require.EqualValues(t, 2, s.Ready)
			require.Zero(t, s.Pending)
			require.False(t, stats(t, e, "t", "other").Paused)
			require.Equal(t, []string{"a", "b"}, adaptertest.Payloads(claim(t, e, "t", "other", "w", 10)), "other groups go on")

			require.NoError(t, e.ResumeGroup(ctx, "t", "g"))
			require.NoError(t, e.ResumeGroup(ctx, "t", "g"))
			require.False(t, stats(t, e, "t", "g").Paused)
			require.Equal(t, []string{"a", "b"}, adaptertest.Payloads(claim(t, e, "t", "g", "w", 10)))

			require.ErrorIs(t, e.PauseGroup(ctx, "t", "nope"), backend.ErrGroupNotFound)
			require.ErrorIs(t, e.ResumeGroup(ctx, "nope", "g"), backend.ErrGroupNotFound)
		})
	}
}
