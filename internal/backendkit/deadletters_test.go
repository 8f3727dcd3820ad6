package backendkit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
)

// TestDeadLetterHelpersValidateFirst checks that Requeue and Purge refuse params that select
// nothing before they run a script: with no client and no script, running one would panic.
func TestDeadLetterHelpersValidateFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, err := Requeue(ctx, nil, nil, nil, 10, &backend.RequeueParams{Topic: "t", Group: "g"})
	require.ErrorIs(t, err, backend.ErrNothingSelected)
	require.Zero(t, n)
	n, err = Requeue(ctx, nil, nil, nil, 10, &backend.RequeueParams{Topic: "t", Group: "g", IDs: []string{"1"}, All: true})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
	require.Zero(t, n)
	for _, p := range []backend.PurgeParams{{}, {Limit: 5}, {IDs: []string{"1"}, All: true}, {All: true, Limit: -1}} {
		n, err := Purge(ctx, nil, nil, nil, 10, &p)
		require.ErrorIs(t, err, backend.ErrInvalidConfig, "%+v", p)
		require.Zero(t, n)
	}
}
