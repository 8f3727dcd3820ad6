package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
)

// A publisher that knew a topic's durable groups registers them again when they vanished from
// Redis without a delete (publish.lua's restorable), so that each receives what it publishes,
// not only the group whose subscription registered it again first.

// The same, but the publisher knew the group: it registers the group again before storing
// (counted as a re-registration), and the group receives what it publishes.
func TestPublisherRegistersAgainTheGroupsItKnew(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "g")
			publish(t, e, "t", "a", "b", "c")
			require.NoError(t, e.Client().Del(ctx, e.Keys("t", "g").Registry()).Err())
			require.Equal(t, []string{"g"}, restored(t, e, "t", "d", "e"))
			require.ElementsMatch(t, []string{"a", "b", "c", "d", "e"}, adaptertest.Payloads(claim(t, e, "t", "g", "c", 10)))
			s, err := e.Stats(ctx, &backend.StatsParams{Topic: "t", Group: "g"})
			require.NoError(t, err)
			require.Equal(t, int64(1), s.Counters.Reregistered, "%+v", s.Counters)
		})
	}
}

// forget deletes every key of topic but those keep names, as a Redis that restarted empty
// (keep: nothing) or another client's DEL leaves it.
func forget(t *testing.T, e *engine.Engine, topic string, keep ...string) {
	t.Helper()
	keys, err := adaptertest.TopicKeys(e.Client(), func(string) string { return e.Tag(topic) }, nil)(topic)
	require.NoError(t, err)
	keys = slices.DeleteFunc(keys, func(k string) bool { return slices.Contains(keep, k) })
	require.NotEmpty(t, keys)
	require.NoError(t, e.Client().Del(t.Context(), keys...).Err())
}

// Two groups of a topic, and Redis forgets everything: the publisher that knew them registers
// both again, and each receives what it publishes; had it registered only the first, the
// second would miss what was published before its subscription registered it again.
func TestPublisherRegistersAgainEveryGroupItKnew(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			known(t, e, "t", "g1", "g2")
			forget(t, e, "t")
			res, err := e.Publish(t.Context(), &backend.PublishParams{Topic: "t", Messages: messages("b")})
			require.NoError(t, err)
			require.Equal(t, []string{"g1", "g2"}, res.Reregistered)
			for _, g := range []string{"g1", "g2"} {
				require.Equal(t, []string{"b"}, adaptertest.Payloads(claim(t, e, "t", g, "c", 10)), g)
			}
		})
	}
}

// The first group's subscription registered it again before anyone published: the registry is
// new, and the publisher registers the group that is still missing.
func TestPublisherRegistersAgainTheGroupsStillMissing(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			known(t, e, "t", "g1", "g2")
			forget(t, e, "t")
			seen := e.CachedVersion("t")
			_, err := e.RegisterAgain(ctx, &backend.RegisterAgainParams{Topic: "t", Group: "g1"})
			require.NoError(t, err)
			require.Equal(t, []string{"g1"}, e.Cached("t"), "the subscriber's process learned the new registry")
			require.NoError(t, e.Learn("t", []any{seen, "0", "g1", "g2"}), "a publisher that learned the old one")
			require.Equal(t, []string{"g2"}, restored(t, e, "t", "b"))
			for _, g := range []string{"g1", "g2"} {
				require.Equal(t, []string{"b"}, adaptertest.Payloads(claim(t, e, "t", g, "c", 10)), g)
			}
		})
	}
}

// What a publisher never restores: a group an operator deleted (its tombstone survived), an
// ephemeral group (it ends without a tombstone), and any group of a registry it learned longer
// ago than the tombstones live.
func TestPublisherRestoresNoDeletedEphemeralOrStaleGroup(t *testing.T) {
	t.Parallel()
	t.Run("deleted", func(t *testing.T) {
		for name, e := range backends(t) {
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				known(t, e, "t", "g1", "gone")
				old := e.CachedVersion("t")
				require.NoError(t, e.DeleteGroup(ctx, "t", "gone"))
				require.NoError(t, e.Learn("t", []any{old, "0", "g1", "gone"}), "a publisher that learned the registry before the delete")
				forget(t, e, "t", e.TombsKey("t"))
				require.Equal(t, []string{"g1"}, restored(t, e, "t", "b"))
				groups, err := e.GroupNames(ctx, "t")
				require.NoError(t, err)
				require.Equal(t, []string{"g1"}, groups)
			})
		}
	})
	t.Run("ephemeral", func(t *testing.T) {
		for name, e := range backends(t) {
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				ensure(t, e, "t", "g1")
				require.NoError(t, e.Join(ctx, &backend.JoinParams{Topic: "t", Group: "r", Consumer: "c", TTL: time.Minute}))
				require.Equal(t, []string{"g1", "r"}, e.Cached("t"), "the publisher saw the ephemeral group")
				forget(t, e, "t")
				require.Equal(t, []string{"g1"}, restored(t, e, "t", "b"))
				groups, err := e.GroupNames(ctx, "t")
				require.NoError(t, err)
				require.Equal(t, []string{"g1"}, groups)
			})
		}
	})
	t.Run("stale", func(t *testing.T) {
		const ttl = 50 * time.Millisecond
		for name, e := range backendsWith(t, backend.Options{TombstoneTTL: ttl}) {
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				known(t, e, "t", "g1")
				forget(t, e, "t")
				time.Sleep(2 * ttl) // the registry learned is now older than a tombstone lives
				require.Empty(t, restored(t, e, "t", "b"))
				topic, err := e.Topic(ctx, "t")
				require.NoError(t, err)
				require.Equal(t, int64(1), topic.Backlog, "unrouted, the message waits in the backlog")
			})
		}
	})
}

// The same process publishes and consumes (a Watermill handler that publishes): its own
// subscription registered its group again first, and the registry it learned so lists that
// group alone. The publisher still knows the other group, and registers it again.
func TestPublisherRegistersAgainAGroupItsOwnRegainLeftOut(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			known(t, e, "t", "g1", "g2")
			forget(t, e, "t")
			_, err := e.RegisterAgain(ctx, &backend.RegisterAgainParams{Topic: "t", Group: "g1"})
			require.NoError(t, err)
			require.Equal(t, []string{"g1"}, e.Cached("t"), "the registry learned lists g1 alone")
			require.Equal(t, []string{"g2"}, restored(t, e, "t", "b"))
			for _, g := range []string{"g1", "g2"} {
				require.Equal(t, []string{"b"}, adaptertest.Payloads(claim(t, e, "t", g, "c", 10)), g)
			}
			require.Equal(t, []string{"g1", "g2"}, e.Cached("t"))
		})
	}
}

// A group the registry left out because an operator deleted it is no candidate: the registry
// did not start afresh since the publisher saw the group.
func TestPublisherDoesNotRestoreAGroupDeletedSinceItLearnedIt(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			known(t, e, "t", "g1", "g2")
			seen := e.CachedVersion("t")
			require.NoError(t, e.DeleteGroup(ctx, "t", "g2"))
			require.NoError(t, e.Learn("t", []any{seen, "0", "g1", "g2"}), "a publisher that learned nothing of the delete")
			// It learns a registry that went on without g2 (here an EnsureGroup; a claim's
			// regain would do the same): g2's absence is a delete, not a loss.
			ensure(t, e, "t", "g3")
			require.Equal(t, []string{"g1", "g3"}, e.Cached("t"))
			require.NoError(t, e.Client().ZRem(ctx, e.TombsKey("t"), "g2").Err(), "even with its tombstone gone")
			require.Empty(t, restored(t, e, "t", "b"))
			groups, err := e.GroupNames(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, []string{"g1", "g3"}, groups)
		})
	}
}

// Each loss counts: the count goes on from the one this process saw last, though Redis
// forgot it and the publisher, not a subscription, registered the group again.
func TestRestoresCountEveryLoss(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			known(t, e, "t", "g")
			for i := 1; i <= 3; i++ {
				forget(t, e, "t")
				require.Equal(t, []string{"g"}, restored(t, e, "t", "b"))
				s, err := e.Stats(ctx, &backend.StatsParams{Topic: "t", Group: "g"})
				require.NoError(t, err)
				require.EqualValues(t, i, s.Counters.Reregistered)
			}
		})
	}
}

// known registers groups on topic and publishes once, so that e's publish cache knows them,
// confirmed by Redis.
func known(t *testing.T, e *engine.Engine, topic string, groups ...string) {
	t.Helper()
	for _, g := range groups {
		ensure(t, e, topic, g)
	}
	publish(t, e, topic, "a")
}

// restored publishes payloads to topic and returns the groups the publish registered again.
func restored(t *testing.T, e *engine.Engine, topic string, payloads ...string) []string {
	t.Helper()
	res, err := e.Publish(t.Context(), &backend.PublishParams{Topic: topic, Messages: messages(payloads...)})
	require.NoError(t, err)
	return res.Reregistered
}
