package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

func testAdmin(t *testing.T, f Factory) {
	run(t, f, "ListsTopicsGroupsAndStats", Options{}, adminInventory)
	run(t, f, "UnknownTopicOrGroup", Options{}, adminUnknown)
}

// The Admin shows every topic that has a group or a backlog, sorted by name, with its groups
// (a paused one marked) and its backlog; Stats of each group match what was published to it
// and say whether it is paused. A topic nobody published to or registered on is not listed.
func adminInventory(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	withGroups, backlogged := topicName(), topicName()
	ensureGroup(t, h, withGroups, "alpha")
	ensureGroup(t, h, withGroups, "beta")
	require.NoError(t, a.PauseGroup(ctx, withGroups, "beta"))
	publishDirect(t, h, withGroups, 4)
	publishDirect(t, h, backlogged, 3)

	want := []backend.TopicInfo{
		{Name: withGroups, Groups: []string{"alpha", "beta"}},
		{Name: backlogged, Backlog: 3},
	}
	slices.SortFunc(want, func(x, y backend.TopicInfo) int { return strings.Compare(x.Name, y.Name) })
	topics, err := a.ListTopics(ctx)
	require.NoError(t, err)
	for i := range topics {
		topics[i] = normalTopic(topics[i])
	}
	require.Equal(t, want, topics, "ListTopics")
	for _, ti := range want {
		require.Equal(t, ti, topicInfo(t, a, ti.Name), "Topic %q", ti.Name)
	}

	require.Equal(t, []backend.GroupInfo{
		{Topic: withGroups, Name: "alpha"},
		{Topic: withGroups, Name: "beta", Paused: true},
	}, listGroups(t, a, withGroups))
	require.Empty(t, listGroups(t, a, backlogged), "a topic with only a backlog has no group")

	for group, paused := range map[string]bool{"alpha": false, "beta": true} {
		s, err := a.Stats(ctx, &backend.StatsParams{Topic: withGroups, Group: group})
		require.NoError(t, err)
		require.Equal(t, withGroups, s.Topic)
		require.Equal(t, group, s.Group)
		require.Equal(t, counts{Ready: 4}, countsOf(s), "group %s", group)
		require.Equal(t, backend.Counters{Published: 4}, s.Counters, "group %s", group)
		require.Equal(t, paused, s.Paused, "Stats.Paused of group %s", group)
	}

	require.NoError(t, a.ResumeGroup(ctx, withGroups, "beta"))
	require.Equal(t, []backend.GroupInfo{
		{Topic: withGroups, Name: "alpha"},
		{Topic: withGroups, Name: "beta"},
	}, listGroups(t, a, withGroups), "after ResumeGroup")
	require.False(t, stats(t, h, withGroups, "beta").Paused, "Stats.Paused after ResumeGroup")
}

// A topic with no key gives ErrTopicNotFound, a group not registered on its topic
// ErrGroupNotFound, from every call that names one; and those calls create nothing.
func adminUnknown(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic, missing := topicName(), topicName()
	ensureGroup(t, h, topic, "known")
	id := publishDirect(t, h, topic, 1)[0]

	_, err := a.Topic(ctx, missing)
	require.ErrorIs(t, err, backend.ErrTopicNotFound, "Topic")
	require.ErrorIs(t, a.DeleteTopic(ctx, missing), backend.ErrTopicNotFound, "DeleteTopic")

	const ghost = "ghost"
	mp := &backend.MessageParams{Topic: topic, Group: ghost, ID: id}
	require.ErrorIs(t, a.PauseGroup(ctx, topic, ghost), backend.ErrGroupNotFound, "PauseGroup")
	require.ErrorIs(t, a.ResumeGroup(ctx, topic, ghost), backend.ErrGroupNotFound, "ResumeGroup")
	require.ErrorIs(t, a.DeleteGroup(ctx, topic, ghost), backend.ErrGroupNotFound, "DeleteGroup")
	_, err = a.Message(ctx, mp)
	require.ErrorIs(t, err, backend.ErrGroupNotFound, "Message")
	require.ErrorIs(t, a.DeleteMessage(ctx, mp), backend.ErrGroupNotFound, "DeleteMessage")
	require.ErrorIs(t, a.RunMessage(ctx, mp), backend.ErrGroupNotFound, "RunMessage")
	for _, st := range backend.States {
		_, err = a.Messages(ctx, &backend.MessagesParams{Topic: topic, Group: ghost, State: st})
		require.ErrorIs(t, err, backend.ErrGroupNotFound, "Messages %s", st)
	}

	require.Equal(t, []string{"known"}, groupNames(listGroups(t, a, topic)), "a failed call registered a group")
	requireTopicGone(t, a, missing)
	if h.Keys != nil { // the other lifecycle cases need Keys; this one checks them when it can
		requireNoGroupKeys(t, h, topic, ghost)
		require.Empty(t, topicKeys(t, h, missing), "a failed call created keys of a topic")
	}
	require.Equal(t, counts{Ready: 1}, countsOf(stats(t, h, topic, "known")))
}
