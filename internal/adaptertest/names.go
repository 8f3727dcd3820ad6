package adaptertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relq/relq/conformance"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// RejectsInvalidNames checks that b's calls, and f's InjectCorrupt, reject names that would
// break the hash tag {prefix:topic} or a key's ':' separators, each with a *pubsub.NameError
// of the right kind. The caller checks that nothing was written under topic "t".
func RejectsInvalidNames(t *testing.T, b pubsub.Backend, f conformance.Faults) {
	t.Helper()
	ctx := context.Background()
	_, err := b.Publish(ctx, &pubsub.PublishParams{Topic: "a}{b", Messages: []pubsub.OutMessage{{Envelope: Envelope("x")}}})
	RequireNameError(t, err, "topic")
	RequireNameError(t, b.EnsureGroup(ctx, &pubsub.EnsureGroupParams{Topic: "t", Group: "{g}"}), "group")
	_, err = b.Claim(ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c{1}", Count: 1, Lease: time.Second})
	RequireNameError(t, err, "consumer")
	_, err = b.Ack(ctx, &pubsub.AckParams{Topic: "t", Group: "a:b", Consumer: "c"})
	RequireNameError(t, err, "group")
	_, err = b.Stats(ctx, &pubsub.StatsParams{Topic: "", Group: "g"})
	RequireNameError(t, err, "topic")
	_, err = b.Groups(ctx, "t*")
	RequireNameError(t, err, "topic")
	RequireNameError(t, f.InjectCorrupt(ctx, "t", "{g", nil), "group")
}

// RequireNameError requires err to be a *pubsub.NameError for a name of kind, which matches
// pubsub.ErrInvalidName.
func RequireNameError(t *testing.T, err error, kind string) {
	t.Helper()
	require.ErrorIs(t, err, pubsub.ErrInvalidName)
	var ne *pubsub.NameError
	require.True(t, errors.As(err, &ne))
	require.Equal(t, kind, ne.Kind)
}

// RequirePrefixError requires err, New's for an Options.Prefix that is no valid name, to be a
// *pubsub.ConfigError for the field Prefix that matches both pubsub.ErrInvalidName and
// pubsub.ErrInvalidConfig.
func RequirePrefixError(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, pubsub.ErrInvalidName)
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)
	var ce *pubsub.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "Prefix", ce.Field)
}
