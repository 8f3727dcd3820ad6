package backend_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
)

// TestRequeueParamsValidate checks that only IDs or All select dead letters to requeue: the
// zero value selects nothing, and both at once are a config error naming All.
func TestRequeueParamsValidate(t *testing.T) {
	t.Parallel()
	ids := []string{"1"}
	require.NoError(t, (&backend.RequeueParams{IDs: ids}).Validate())
	require.NoError(t, (&backend.RequeueParams{All: true}).Validate())
	requireNothing(t, (&backend.RequeueParams{}).Validate(), "RequeueParams")
	requireNothing(t, (&backend.RequeueParams{IDs: []string{}}).Validate(), "RequeueParams")
	requireConfig(t, (&backend.RequeueParams{IDs: ids, All: true}).Validate(), "RequeueParams.All")
}

// TestPurgeParamsValidate checks that IDs, or All with a Limit of zero or more, select dead
// letters to purge, and that everything else is refused with the error that says why.
func TestPurgeParamsValidate(t *testing.T) {
	t.Parallel()
	ids := []string{"1"}
	require.NoError(t, (&backend.PurgeParams{IDs: ids}).Validate())
	require.NoError(t, (&backend.PurgeParams{All: true}).Validate())
	require.NoError(t, (&backend.PurgeParams{All: true, Limit: 3}).Validate())
	requireNothing(t, (&backend.PurgeParams{}).Validate(), "PurgeParams")
	requireNothing(t, (&backend.PurgeParams{IDs: []string{}}).Validate(), "PurgeParams")
	requireNothing(t, (&backend.PurgeParams{Limit: 3}).Validate(), "PurgeParams")
	requireConfig(t, (&backend.PurgeParams{IDs: ids, All: true}).Validate(), "PurgeParams.All")
	requireConfig(t, (&backend.PurgeParams{IDs: ids, Limit: 1}).Validate(), "PurgeParams.Limit")
	requireConfig(t, (&backend.PurgeParams{All: true, Limit: -1}).Validate(), "PurgeParams.Limit")
	requireConfig(t, (&backend.PurgeParams{Limit: -1}).Validate(), "PurgeParams.Limit")
}

func requireNothing(t *testing.T, err error, params string) {
	t.Helper()
	require.ErrorIs(t, err, backend.ErrNothingSelected)
	require.ErrorIs(t, err, backend.ErrInvalidConfig, "an invalid params field, as the others")
	var se *backend.SelectionError
	require.ErrorAs(t, err, &se)
	require.Equal(t, params, se.Params)
	require.Contains(t, err.Error(), params)
}

func requireConfig(t *testing.T, err error, field string) {
	t.Helper()
	var ce *backend.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, field, ce.Field)
	require.False(t, errors.Is(err, backend.ErrNothingSelected), "%v selects something, wrongly", err)
}
