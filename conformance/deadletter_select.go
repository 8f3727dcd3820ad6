package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
)

// A requeue or purge whose params select no dead letter (no IDs and no All, an empty IDs, or
// for a purge a Limit alone) fails with a *backend.SelectionError matching
// backend.ErrNothingSelected, and IDs together with All with an error matching
// backend.ErrInvalidConfig: neither moves nor deletes anything. The zero value is never read
// as "every dead letter".
func deadLetterNothingSelected(t *testing.T, h Harness) {
	ctx := context.Background()
	topic, group := topicName(), "billing"
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 3)
	for _, d := range claimN(t, h, topic, group, "c", 3, time.Minute) {
		deadLetter(t, h, topic, group, d, "test")
	}
	before := deadLetters(t, h, topic, group, 0, 10)
	require.Len(t, before, 3)
	ids := []string{before[0].ID}

	for _, p := range []backend.RequeueParams{
		{Topic: topic, Group: group},
		{Topic: topic, Group: group, IDs: []string{}},
	} {
		n, err := h.Backend.RequeueDeadLetters(ctx, &p)
		requireNothingSelected(t, err, "RequeueParams", p)
		require.Zero(t, n)
	}
	n, err := h.Backend.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: group, IDs: ids, All: true})
	require.ErrorIs(t, err, backend.ErrInvalidConfig, "IDs with All")
	require.NotErrorIs(t, err, backend.ErrNothingSelected, "IDs with All")
	require.Zero(t, n)

	for _, p := range []backend.PurgeParams{
		{Topic: topic, Group: group},
		{Topic: topic, Group: group, IDs: []string{}},
		{Topic: topic, Group: group, Limit: 2},
	} {
		n, err := h.Backend.PurgeDeadLetters(ctx, &p)
		requireNothingSelected(t, err, "PurgeParams", p)
		require.Zero(t, n)
	}
	n, err = h.Backend.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, IDs: ids, All: true})
	require.ErrorIs(t, err, backend.ErrInvalidConfig, "IDs with All")
	require.NotErrorIs(t, err, backend.ErrNothingSelected, "IDs with All")
	require.Zero(t, n)

	require.Equal(t, before, deadLetters(t, h, topic, group, 0, 10), "a refused call moved or deleted a dead letter")
	require.Equal(t, counts{Dead: 3}, countsOf(stats(t, h, topic, group)))
}

// requireNothingSelected checks that err is the typed error of params p that select nothing.
func requireNothingSelected(t *testing.T, err error, params string, p any) {
	t.Helper()
	require.ErrorIs(t, err, backend.ErrNothingSelected, "%+v", p)
	var se *backend.SelectionError
	require.ErrorAs(t, err, &se, "%+v", p)
	require.Equal(t, params, se.Params)
}
