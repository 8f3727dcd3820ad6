package adaptertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/stretchr/testify/require"
)

// RejectsInvalidNames checks that b's calls, and f's InjectCorrupt, reject names that would
// break the hash tag {prefix:topic} or a key's ':' separators, each with a *backend.NameError
// of the right kind. The caller checks that nothing was written under topic "t".
func RejectsInvalidNames(t *testing.T, b backend.Backend, f conformance.Faults) {
	t.Helper()
	ctx := context.Background()
	_, err := b.Publish(ctx, &backend.PublishParams{Topic: "a}{b", Messages: []backend.OutMessage{{Envelope: Envelope("x")}}})
	RequireNameError(t, err, "topic")
	RequireNameError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "t", Group: "{g}"}), "group")
	_, err = b.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c{1}", Count: 1, Lease: time.Second})
	RequireNameError(t, err, "consumer")
	_, err = b.Ack(ctx, &backend.AckParams{Topic: "t", Group: "a:b", Consumer: "c"})
	RequireNameError(t, err, "group")
	_, err = b.Stats(ctx, &backend.StatsParams{Topic: "", Group: "g"})
	RequireNameError(t, err, "topic")
	_, err = b.GroupNames(ctx, "t*")
	RequireNameError(t, err, "topic")
	RequireNameError(t, f.InjectCorrupt(ctx, "t", "{g", nil), "group")
}

// RequireNameError requires err to be a *backend.NameError for a name of kind, which matches
// backend.ErrInvalidName.
func RequireNameError(t *testing.T, err error, kind string) {
	t.Helper()
	require.ErrorIs(t, err, backend.ErrInvalidName)
	var ne *backend.NameError
	require.True(t, errors.As(err, &ne))
	require.Equal(t, kind, ne.Kind)
}

// RequirePrefixError requires err, New's for an Options.Prefix that is no valid name, to be a
// *backend.ConfigError for the field Prefix that matches both backend.ErrInvalidName and
// backend.ErrInvalidConfig.
func RequirePrefixError(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, backend.ErrInvalidName)
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
	var ce *backend.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "Prefix", ce.Field)
}
