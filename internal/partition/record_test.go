package partition

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
)

func TestEnsureAgreesOnTheCount(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := srv.Client(t)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	keysOf := func(topic string) Keys {
		tag := keys.Tag(prefix, topic)
		return Keys{Record: RecordKey(tag), InUse: keys.Join(tag, "meta")}
	}

	t.Run("a new topic records its count and others agree", func(t *testing.T) {
		k := keysOf("orders")
		n, err := Ensure(ctx, c, "orders", 4, k)
		require.NoError(t, err)
		require.Equal(t, 4, n)
		require.Equal(t, "v1:4", c.Get(ctx, k.Record).Val())
		n, err = Ensure(ctx, c, "orders", 4, k)
		require.NoError(t, err)
		require.Equal(t, 4, n)
	})

	t.Run("another count is refused and nothing changes", func(t *testing.T) {
		k := keysOf("orders")
		for _, p := range []int{1, 8} {
			n, err := Ensure(ctx, c, "orders", p, k)
			var ce *CountError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, CountError{Topic: "orders", Configured: p, Recorded: 4}, *ce)
			require.Equal(t, 4, n)
		}
		require.Equal(t, "v1:4", c.Get(ctx, k.Record).Val())
	})

	t.Run("one partition writes nothing", func(t *testing.T) {
		k := keysOf("plain")
		n, err := Ensure(ctx, c, "plain", 1, k)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Zero(t, c.Exists(ctx, k.Record).Val(), "P = 1 keeps today's keys exactly")
	})

	t.Run("a topic in use unpartitioned is not split", func(t *testing.T) {
		k := keysOf("legacy")
		require.NoError(t, c.HSet(ctx, k.InUse, "seq", 7).Err())
		_, err := Ensure(ctx, c, "legacy", 4, k)
		var ce *CountError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 1, ce.Recorded)
		require.Zero(t, c.Exists(ctx, k.Record).Val(), "refused, so nothing recorded")
		n, err := Ensure(ctx, c, "legacy", 1, k)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})

	t.Run("a record this version does not know is an error", func(t *testing.T) {
		k := keysOf("future")
		require.NoError(t, c.Set(ctx, k.Record, "v2:4:something", 0).Err())
		_, err := Ensure(ctx, c, "future", 4, k)
		require.ErrorContains(t, err, "not understood by this version")
	})
}
