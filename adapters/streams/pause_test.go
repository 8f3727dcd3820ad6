package streams

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func TestAPausedGroupClaimsNothingAndLeavesNothingPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "other")
	ids := e.Publish("t", "a", "b")
	require.NoError(t, e.b.PauseGroup(e.Ctx, "t", "g"))
	require.NoError(t, e.b.PauseGroup(e.Ctx, "t", "g"), "idempotent")
	require.True(t, e.Stats("t", "g").Paused)
	require.False(t, e.Stats("t", "other").Paused)

	require.Empty(t, e.Claim("t", "g", "c", 10))
	// A blocking claim waits its Block and returns nothing, though entries are there.
	start := time.Now()
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	require.Empty(t, e.pel("t", "g"), "the pause left nothing pending")
	e.Publish("t", "c")
	require.Equal(t, counts{Ready: 3}, e.counts("t", "g"), "publishes still reach it")
	require.Len(t, e.Claim("t", "other", "c", 10), 3, "other groups go on")

	require.NoError(t, e.b.ResumeGroup(e.Ctx, "t", "g"))
	require.NoError(t, e.b.ResumeGroup(e.Ctx, "t", "g"), "idempotent")
	require.False(t, e.Stats("t", "g").Paused)
	require.Equal(t, ids, adaptertest.IDs(e.Claim("t", "g", "c", 2)))
	groups, err := e.b.ListGroups(e.Ctx, "t")
	require.NoError(t, err)
	require.False(t, groups[0].Paused)

	require.ErrorIs(t, e.b.PauseGroup(e.Ctx, "t", "nope"), backend.ErrGroupNotFound)
	require.ErrorIs(t, e.b.ResumeGroup(e.Ctx, "nope", "g"), backend.ErrGroupNotFound)
}

func TestListGroupsShowsFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "durable")
	require.NoError(t, e.b.Join(e.Ctx, &backend.JoinParams{Topic: "t", Group: "eph", Consumer: "c", TTL: time.Minute}))
	require.NoError(t, e.b.PauseGroup(e.Ctx, "t", "durable"))
	before := e.redisNow()
	groups, err := e.b.ListGroups(e.Ctx, "t")
	require.NoError(t, err)
	require.Len(t, groups, 2)
	require.Equal(t, backend.GroupInfo{Topic: "t", Name: "durable", Paused: true}, groups[0])
	require.Equal(t, "eph", groups[1].Name)
	require.True(t, groups[1].Ephemeral)
	require.WithinDuration(t, before.Add(time.Minute), groups[1].Expires, 5*time.Second)

	require.Equal(t, backend.TopicInfo{Name: "t", Groups: []string{"durable", "eph"}}, e.topicInfo("t"))
	groups, err = e.b.ListGroups(e.Ctx, "nothing")
	require.NoError(t, err)
	require.Empty(t, groups)
}

func TestListTopicsListsGroupsAndBacklogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("grouped", "g")
	e.Publish("backlog", "a", "b")
	e.EnsureGroup("empty", "g")
	require.NoError(t, e.b.DeleteGroup(e.Ctx, "empty", "g"))
	topics, err := e.b.ListTopics(e.Ctx)
	require.NoError(t, err)
	require.Equal(t, []backend.TopicInfo{
		{Name: "backlog", Groups: []string{}, Backlog: 2},
		{Name: "grouped", Groups: []string{"g"}},
	}, topics)
}
