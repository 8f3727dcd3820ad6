package engine_test

import (
	"testing"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// A topic laid out by relq before the engine (layout 1: the registry was a SET named groups
// or zgroups) is refused by EnsureGroup and Publish with an error naming both layouts, and
// nothing is written.
func TestALayoutOneTopicIsRefused(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			legacy := map[string]string{"list": "groups", "zset": "zgroups"}[name]
			meta := e.Keys("old", "g").Meta()
			tag := meta[:len(meta)-len(":meta")]
			require.NoError(t, e.Client().SAdd(ctx, keys.Join(tag, legacy), "g").Err())

			err := e.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "old", Group: "g"})
			require.ErrorIs(t, err, backend.ErrStorageLayout)
			var le *engine.LayoutError
			require.ErrorAs(t, err, &le)
			require.Equal(t, 1, le.Found)
			require.Equal(t, engine.Layout, le.Want)
			require.ErrorContains(t, err, "found storage layout 1 in Redis, this relq reads layout 2")

			_, err = e.Publish(ctx, &backend.PublishParams{Topic: "old", Messages: messages("x")})
			require.ErrorIs(t, err, backend.ErrStorageLayout)
			require.Zero(t, e.Client().Exists(ctx, meta).Val(), "nothing written")
		})
	}
}

// A topic whose meta names a layout this code does not know (a newer relq wrote it) is refused.
func TestANewerLayoutIsRefused(t *testing.T) {
	t.Parallel()
	for _, e := range backends(t) {
		ctx := t.Context()
		require.NoError(t, e.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "new", Group: "g"}))
		require.NoError(t, e.Client().HSet(ctx, e.Keys("new", "g").Meta(), "layout", "3").Err())
		err := e.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "new", Group: "h"})
		var le *engine.LayoutError
		require.ErrorAs(t, err, &le)
		require.Equal(t, 3, le.Found)
		_, err = e.Publish(ctx, &backend.PublishParams{Topic: "new", Messages: messages("x")})
		require.ErrorIs(t, err, backend.ErrStorageLayout)
	}
}

// A subscriber refuses a layout-1 topic at Subscribe, instead of retrying its registration.
func TestSubscribeRefusesALayoutOneTopic(t *testing.T) {
	t.Parallel()
	c, prefix := adaptertest.Server(t)
	b, err := list.New(c, list.Options{Prefix: prefix})
	require.NoError(t, err)
	require.NoError(t, c.SAdd(t.Context(), keys.Join(keys.Tag(prefix, "old"), "groups"), "g").Err())
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Group: "g"}, nil)
	require.NoError(t, err)
	defer sub.Close()
	_, err = sub.Subscribe(t.Context(), "old")
	require.ErrorIs(t, err, backend.ErrStorageLayout)
}
