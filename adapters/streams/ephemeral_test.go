package streams

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func (e *env) join(topic, group, consumer string, ttl time.Duration) {
	e.T.Helper()
	require.NoError(e.T, e.b.Join(e.Ctx, &backend.JoinParams{Topic: topic, Group: group, Consumer: consumer, TTL: ttl}))
}

func (e *env) leave(topic, group, consumer string) {
	e.T.Helper()
	require.NoError(e.T, e.b.Leave(e.Ctx, &backend.LeaveParams{Topic: topic, Group: group, Consumer: consumer}))
}

// expire moves the ephemeral group's expiry into the past, as if every member had stopped
// calling Join.
func (e *env) expire(topic, group string) {
	e.T.Helper()
	require.NoError(e.T, e.C.ZAddXX(e.Ctx, e.tk(topic).ephemeral, redis.Z{Score: 1, Member: group}).Err())
}

func TestTheLastLeaveDeletesAnEphemeralGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.join("t", "reply", "a", time.Minute)
	e.join("t", "reply", "b", time.Minute)
	e.join("t", "reply", "a", time.Minute) // again: extends a's membership
	ids := e.Publish("t", "x")
	require.Equal(t, ids, adaptertest.IDs(e.Claim("t", "reply", "a", 10)))

	e.leave("t", "reply", "a")
	require.Equal(t, []string{"reply"}, groupsOf(t, e, "t"), "b is still a member")
	e.leave("t", "reply", "b")
	require.Empty(t, groupsOf(t, e, "t"))
	require.Empty(t, e.Keys("t"), "no group, no backlog: no key")
	e.leave("t", "reply", "b") // not registered: nothing to do
}

func TestJoinAndLeaveRefuseADurableGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "durable")
	err := e.b.Join(e.Ctx, &backend.JoinParams{Topic: "t", Group: "durable", Consumer: "c", TTL: time.Minute})
	require.ErrorIs(t, err, backend.ErrNotEphemeral)
	err = e.b.Leave(e.Ctx, &backend.LeaveParams{Topic: "t", Group: "durable", Consumer: "c"})
	require.ErrorIs(t, err, backend.ErrNotEphemeral)
	require.Equal(t, []string{"durable"}, groupsOf(t, e, "t"))

	err = e.b.Join(e.Ctx, &backend.JoinParams{Topic: "t", Group: "g", Consumer: "c"})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
	// EnsureGroup leaves an ephemeral group as it is.
	e.join("t", "eph", "c", time.Minute)
	e.EnsureGroup("t", "eph")
	groups, err := e.b.ListGroups(e.Ctx, "t")
	require.NoError(t, err)
	require.True(t, groups[1].Ephemeral)
}

// While every group of a topic is ephemeral, its keys expire with the last membership, the
// keys created after the Join too; a durable group makes them live for good.
func TestAnAllEphemeralTopicExpiresWithItsMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.join("t", "a", "c", time.Minute)
	e.join("t", "b", "c", 2*time.Minute)
	e.Publish("t", "x", "y")
	ds := e.Claim("t", "a", "c", 1) // creates the group's pending_at and leases
	e.Nack("t", "a", "c", 0, backend.NackItem{ID: ds[0].ID, Attempt: 1, Delay: time.Hour})
	// Each key expires one TTL after its deadline (the slack that lets a survivor delete a
	// dead group first): the topic's keys after the last group's, 2+2 minutes.
	for _, key := range e.Keys("t") {
		ttl := e.C.PTTL(e.Ctx, e.tk("t").base+":"+key).Val()
		require.True(t, ttl > 0 && ttl <= 4*time.Minute, "%s expires in %v", key, ttl)
	}
	require.Greater(t, e.C.PTTL(e.Ctx, e.tk("t").stream).Val(), 3*time.Minute, "the topic lives as long as its last group, and a TTL")

	e.EnsureGroup("t", "durable")
	require.Equal(t, time.Duration(-1), e.C.PTTL(e.Ctx, e.tk("t").stream).Val())
	e.join("t", "a", "c", time.Minute)
	require.Equal(t, time.Duration(-1), e.C.PTTL(e.Ctx, e.gk("t", "a").retry).Val(), "a Join with a durable group beside persists")
}

func TestAnAllEphemeralTopicWhoseProcessesDiedLeavesNoKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.join("t", "reply", "c", 100*time.Millisecond)
	e.Publish("t", "x")
	e.Claim("t", "reply", "c", 1)
	require.Eventually(t, func() bool { return len(e.Keys("t")) == 0 }, 5*time.Second, 20*time.Millisecond)
}

// An ephemeral group whose members all stopped calling Join goes with the next publish to the
// topic, or the next Reclaim of any group on it.
func TestAnExpiredEphemeralGroupIsDeletedByThePublishOrReclaimThatFindsIt(t *testing.T) {
	t.Parallel()
	for name, find := range map[string]func(e *env){
		"publish": func(e *env) { e.Publish("t", "x") },
		"reclaim": func(e *env) { e.Reclaim("t", "durable", 0) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.EnsureGroup("t", "durable")
			e.join("t", "gone", "c", time.Minute)
			e.join("t", "live", "c", time.Minute)
			e.Publish("t", "a")
			e.Claim("t", "gone", "c", 1)
			e.expire("t", "gone")

			find(e)
			require.Equal(t, []string{"durable", "live"}, groupsOf(t, e, "t"))
			require.Empty(t, e.groupKeysLeft("t", "gone"))
		})
	}
}

// A Join finds its group expired (its process was thought dead): the group is deleted and
// joined again as a new one.
func TestJoinOfAnExpiredGroupStartsItAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "durable")
	e.join("t", "g", "c", time.Minute)
	e.Publish("t", "old")
	e.expire("t", "g")
	e.join("t", "g", "c", time.Minute)
	fresh := e.Publish("t", "new")
	require.Equal(t, fresh, adaptertest.IDs(e.Claim("t", "g", "c", 10)))
}
