package engine_test

import (
	"testing"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/stretchr/testify/require"
)

// The Redis client resends a script whose reply it lost; the resend of a publish (same lane,
// same token) stores nothing twice and returns the same IDs, while the lane's next call stores
// anew. The lane record is a field of meta: no key per call, no expiry.
func TestPublishResentOnItsLaneStoresOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, r adaptertest.LaneRig) {
		first, next, other := adaptertest.PublishResentOnItsLaneStoresOnce(t, r)
		require.Equal(t, adaptertest.IDsFrom(t, first[0], 2), first)
		require.Equal(t, adaptertest.IDsFrom(t, adaptertest.IDAfter(t, first[0], 2), 2), next)
		require.Equal(t, adaptertest.IDsFrom(t, adaptertest.IDAfter(t, first[0], 4), 2), other, "another lane's token is its own")
	})
}

// Concurrent Publish calls of one engine never share a lane, so no call's resend can be taken
// for another's.
func TestConcurrentPublishesTakeTheirOwnLanes(t *testing.T) {
	t.Parallel()
	eachBackend(t, adaptertest.ConcurrentPublishesTakeTheirOwnLanes)
}

// A thousand publishes leave the keys the first one left: no key per publish.
func TestPublishesLeaveNoKeyPerCall(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, r adaptertest.LaneRig) { adaptertest.PublishesLeaveNoKeyPerCall(t, r, 1000) })
}

// A registry member that is not a valid group name (foreign data with braces would address
// keys outside the topic's slot) is refused, and the cache keeps what it had.
func TestRegistryRejectsAForeignGroupName(t *testing.T) {
	t.Parallel()
	e := backends(t)["list"]
	require.Empty(t, e.Cached("t"), "no group known: the backlog")
	require.NoError(t, e.Remember("t", []any{"3", "0", "b", "a"}))
	require.Equal(t, []string{"a", "b"}, e.Cached("t"), "sorted")
	err := e.Remember("t", []any{"4", "0", "a", "{x}"})
	require.ErrorIs(t, err, backend.ErrInvalidName)
	require.ErrorContains(t, err, "list: registered group: ")
	require.Equal(t, []string{"a", "b"}, e.Cached("t"), "a rejected registry is not cached")
}

// A resend that finds its lane record after another process registered a group answers with
// the caller's own registry version, so the caller does not take the new version for its old
// groups: its next publish reaches the new group too.
func TestAResendDoesNotHideANewGroup(t *testing.T) {
	t.Parallel()
	c, prefix := adaptertest.Server(t)
	for _, name := range []string{"list", "zset"} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			open := func() *engine.Engine {
				if name == "list" {
					b, err := list.New(c, list.Options{Prefix: prefix + name})
					require.NoError(t, err)
					return engineOf(b)
				}
				b, err := zset.New(c, zset.Options{Prefix: prefix + name})
				require.NoError(t, err)
				return engineOf(b)
			}
			a, other := open(), open()
			require.NoError(t, a.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "t", Group: "a"}))
			p := &backend.PublishParams{Topic: "t", Messages: messages("x")}
			first, err := a.PublishOn(ctx, p, 0, "1")
			require.NoError(t, err)
			require.NoError(t, other.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "t", Group: "b"}))

			again, err := a.PublishOn(ctx, p, 0, "1") // the client resends the first call
			require.NoError(t, err)
			require.Equal(t, first, again)
			_, err = a.PublishOn(ctx, &backend.PublishParams{Topic: "t", Messages: messages("y")}, 0, "2")
			require.NoError(t, err)
			for group, want := range map[string]int64{"a": 2, "b": 1} {
				st, err := a.Stats(ctx, &backend.StatsParams{Topic: "t", Group: group})
				require.NoError(t, err)
				require.Equal(t, want, st.Ready, "group %s", group)
			}
		})
	}
}

// Groups whose registry lost its version (meta deleted by hand, or lost in a failover) still
// receive what is published: the publish gives the registry a version and routes by it,
// instead of storing to the backlog.
func TestARegistryWithoutAVersionStillRoutes(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			for _, g := range []string{"a", "b"} {
				require.NoError(t, e.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "t", Group: g}))
			}
			require.NoError(t, e.Client().HDel(ctx, e.Keys("t", "a").Meta(), "ver").Err())
			require.NoError(t, e.Learn("t", []any{"0", "0"}), "a process that knows no registry yet")
			_, err := e.Publish(ctx, &backend.PublishParams{Topic: "t", Messages: messages("x")})
			require.NoError(t, err)
			groups, err := e.GroupNames(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, []string{"a", "b"}, groups)
			for _, g := range groups {
				st, err := e.Stats(ctx, &backend.StatsParams{Topic: "t", Group: g})
				require.NoError(t, err)
				require.EqualValues(t, 1, st.Ready, "group %s", g)
			}
		})
	}
}

// BatchSize is bounded: a script hands a batch's ids to one command, which Lua cannot do
// past about 8,000 values.
func TestBatchSizeIsBounded(t *testing.T) {
	t.Parallel()
	c, prefix := adaptertest.Server(t)
	_, err := list.New(c, list.Options{Prefix: prefix, BatchSize: 5000})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
	require.ErrorContains(t, err, "BatchSize must be from 1 to 4096")
	_, err = zset.New(c, zset.Options{Prefix: prefix, BatchSize: 4096})
	require.NoError(t, err)
}

// A process that dies leaves its publish lanes' records in meta; a new process's first call on
// a lane sweeps those idle for an hour, and keeps the others.
func TestIdleLaneRecordsAreSwept(t *testing.T) {
	t.Parallel()
	eachBackend(t, adaptertest.IdleLaneRecordsAreSwept)
}
