package engine_test

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/stretchr/testify/require"
)

func join(t *testing.T, e *engine.Engine, topic, group, consumer string, ttl time.Duration) {
	t.Helper()
	require.NoError(t, e.Join(t.Context(), &backend.JoinParams{Topic: topic, Group: group, Consumer: consumer, TTL: ttl}))
}

func leave(t *testing.T, e *engine.Engine, topic, group, consumer string) {
	t.Helper()
	require.NoError(t, e.Leave(t.Context(), &backend.LeaveParams{Topic: topic, Group: group, Consumer: consumer}))
}

// waitExpired waits until the Redis clock passes the membership deadline of group.
func waitExpired(t *testing.T, e *engine.Engine, topic, group string) {
	t.Helper()
	groups, err := e.ListGroups(t.Context(), topic)
	require.NoError(t, err)
	var expires time.Time
	for _, g := range groups {
		if g.Name == group {
			expires = g.Expires
		}
	}
	require.False(t, expires.IsZero(), "%s is ephemeral", group)
	// The scripts read the clock in whole ms and expire a deadline once it is below now.
	past := expires.Add(time.Millisecond)
	require.Eventually(t, func() bool { return !e.Client().Time(t.Context()).Val().Before(past) },
		5*time.Second, 5*time.Millisecond)
}

// An ephemeral group lives while one of its members does: the last member's Leave deletes it,
// and with it every key of a topic that had no other group.
func TestTheLastLeaveDeletesAOneGroupTopic(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			join(t, e, "replies", "r", "c1", time.Minute)
			join(t, e, "replies", "r", "c2", time.Minute)
			publish(t, e, "replies", "a", "b")
			require.Len(t, claim(t, e, "replies", "r", "c1", 1), 1)
			groups, err := e.ListGroups(ctx, "replies")
			require.NoError(t, err)
			require.Len(t, groups, 1)
			require.True(t, groups[0].Ephemeral)
			require.False(t, groups[0].Paused)
			now := e.Client().Time(ctx).Val()
			require.WithinDuration(t, now.Add(time.Minute), groups[0].Expires, 5*time.Second)

			leave(t, e, "replies", "r", "c1")
			require.Equal(t, []string{"r"}, groupsOf(t, e, "replies"), "a member is left")
			leave(t, e, "replies", "r", "c2")
			require.Empty(t, tagKeys(t, e, "replies"))
			leave(t, e, "replies", "r", "c2")
		})
	}
}

// A group whose members all stopped calling Join (their process died) is deleted by the next
// publish to its topic, before the batch is stored: with no group left the batch waits in the
// backlog, which the next group takes. No operator deleted it, so a claim of it finds no
// tombstone: ErrGroupLost, on which a subscription that was only paused registers again.
func TestAnExpiredMembershipIsRemovedByTheNextPublish(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			join(t, e, "t", "dead", "c", 50*time.Millisecond)
			publish(t, e, "t", "a")
			waitExpired(t, e, "t", "dead")
			publish(t, e, "t", "b")
			topic, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, backend.TopicInfo{Name: "t", Groups: []string{}, Backlog: 1}, topic)
			require.Empty(t, groupKeys(tagKeys(t, e, "t"), "dead"))
			_, err = claimErr(t, e, "t", "dead", "c", 1)
			require.ErrorIs(t, err, backend.ErrGroupLost)

			join(t, e, "t", "next", "c", time.Minute)
			require.Equal(t, []string{"b"}, adaptertest.Payloads(claim(t, e, "t", "next", "c", 10)))
		})
	}
}

// Any Reclaim on the topic deletes an expired ephemeral group too: the reclaim loop of another
// group's subscriber finds it with nobody publishing.
func TestAnExpiredGroupIsRemovedByReclaim(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "durable")
			join(t, e, "t", "dead", "c", 50*time.Millisecond)
			publish(t, e, "t", "a")
			waitExpired(t, e, "t", "dead")
			_, err := e.Reclaim(ctx, &backend.ReclaimParams{Topic: "t", Group: "durable"})
			require.NoError(t, err)
			require.Equal(t, []string{"durable"}, groupsOf(t, e, "t"))
			require.Empty(t, groupKeys(tagKeys(t, e, "t"), "dead"))
			require.Equal(t, []string{"a"}, adaptertest.Payloads(claim(t, e, "t", "durable", "c", 10)))
		})
	}
}

// While every group of a topic is ephemeral, every key of the topic expires (so a topic whose
// processes all died leaves nothing), keys created after the Join too; a durable group makes
// the topic's keys persist, and the ephemeral group's at its next Join.
func TestAllEphemeralTopicKeysCarryATTL(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			join(t, e, "t", "r", "c", time.Minute)
			publish(t, e, "t", "a", "b", "c")
			claim(t, e, "t", "r", "c", 1)
			keys := tagKeys(t, e, "t")
			require.NotEmpty(t, keys)
			tag := e.Tag("t") + ":"
			for _, k := range keys {
				d := pttl(t, e, tag+k)
				require.Positive(t, d, "%s expires", k)
				require.LessOrEqual(t, d, 2*time.Minute+time.Second, "%s: the deadline and one TTL of slack", k)
			}

			ensure(t, e, "t", "durable")
			k := e.Keys("t", "r")
			for _, key := range []string{k.Meta(), k.Bodies(), k.Registry(), k.Ephemeral()} {
				require.Equal(t, time.Duration(-1), pttl(t, e, key), "%s persists with a durable group", key)
			}
			join(t, e, "t", "r", "c", time.Minute)
			require.Equal(t, time.Duration(-1), pttl(t, e, k.Pending()))
			require.Equal(t, time.Duration(-1), pttl(t, e, k.Members()))
		})
	}
}

// Join and Leave refuse a durable group, and Join a TTL that is not positive.
func TestJoinRefusesADurableGroup(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "d")
			require.ErrorIs(t, e.Join(ctx, &backend.JoinParams{Topic: "t", Group: "d", Consumer: "c", TTL: time.Minute}), backend.ErrNotEphemeral)
			require.ErrorIs(t, e.Leave(ctx, &backend.LeaveParams{Topic: "t", Group: "d", Consumer: "c"}), backend.ErrNotEphemeral)
			require.ErrorIs(t, e.Join(ctx, &backend.JoinParams{Topic: "t", Group: "e", Consumer: "c"}), backend.ErrInvalidConfig)
			require.Equal(t, []string{"d"}, groupsOf(t, e, "t"))
		})
	}
}
