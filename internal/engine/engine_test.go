package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// backends are the two backends over the engine, each on a prefix of its own.
func backends(t *testing.T) map[string]*engine.Engine {
	c, prefix := adaptertest.Server(t)
	l, err := list.New(c, list.Options{Prefix: prefix + "l"})
	require.NoError(t, err)
	z, err := zset.New(c, zset.Options{Prefix: prefix + "z"})
	require.NoError(t, err)
	return map[string]*engine.Engine{"list": l.Engine, "zset": z.Engine}
}

func messages(payloads ...string) []pubsub.OutMessage {
	out := make([]pubsub.OutMessage, len(payloads))
	for i, p := range payloads {
		out[i] = pubsub.OutMessage{Envelope: adaptertest.Envelope(p)}
	}
	return out
}

// The Redis client resends a script whose reply it lost; the resend of a publish (same lane,
// same token) stores nothing twice and returns the same IDs, while the lane's next call stores
// anew. The lane record is a field of meta: no key per call, no expiry.
func TestPublishResentOnItsLaneStoresOnce(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			p := &pubsub.PublishParams{Topic: "orders", Messages: messages("a", "b")}
			first, err := e.PublishOn(ctx, p, 0, "7")
			require.NoError(t, err)
			again, err := e.PublishOn(ctx, p, 0, "7")
			require.NoError(t, err)
			require.Equal(t, first, again)
			st, err := e.Stats(ctx, &pubsub.StatsParams{Topic: "orders", Group: pubsub.DefaultGroup})
			require.NoError(t, err)
			require.EqualValues(t, 2, st.Ready)
			require.EqualValues(t, 2, st.Counters.Published)

			next, err := e.PublishOn(ctx, p, 0, "8")
			require.NoError(t, err)
			require.Equal(t, []string{"3", "4"}, next)
			other, err := e.PublishOn(ctx, p, 1, "7")
			require.NoError(t, err)
			require.Equal(t, []string{"5", "6"}, other, "another lane's token is its own")

			k := e.Keys("orders", pubsub.DefaultGroup)
			ttl := e.Client().PTTL(ctx, k.Meta()).Val()
			require.Equal(t, time.Duration(-1), ttl, "meta exists and never expires")
		})
	}
}

// Concurrent Publish calls of one engine never share a lane, so no call's resend can be taken
// for another's.
func TestConcurrentPublishesTakeTheirOwnLanes(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			const calls = 50
			errs := make(chan error, calls)
			for i := range calls {
				go func() {
					_, err := e.Publish(ctx, &pubsub.PublishParams{Topic: "t", Messages: messages(fmt.Sprint(i))})
					errs <- err
				}()
			}
			for range calls {
				require.NoError(t, <-errs)
			}
			st, err := e.Stats(ctx, &pubsub.StatsParams{Topic: "t", Group: pubsub.DefaultGroup})
			require.NoError(t, err)
			require.EqualValues(t, calls, st.Ready)
		})
	}
}

// A registry member that is not a valid group name (foreign data with braces would address
// keys outside the topic's slot) is refused, and the cache keeps what it had.
func TestRegistryRejectsAForeignGroupName(t *testing.T) {
	t.Parallel()
	e := backends(t)["list"]
	require.Equal(t, []string{pubsub.DefaultGroup}, e.Cached("t"))
	require.NoError(t, e.Remember("t", []any{"3", "b", "a"}))
	require.Equal(t, []string{"a", "b"}, e.Cached("t"), "sorted")
	err := e.Remember("t", []any{"4", "a", "{x}"})
	require.ErrorIs(t, err, pubsub.ErrInvalidName)
	require.ErrorContains(t, err, "list: registered group: ")
	require.Equal(t, []string{"a", "b"}, e.Cached("t"), "a rejected registry is not cached")
}
