package engine_test

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// ListTopics lists the topics with a group or a backlog, with both; ListGroups shows each
// group's flags; a topic with neither is not found.
func TestTopicsAndGroupsAreListed(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "orders", "billing")
			require.NoError(t, e.PauseGroup(ctx, "orders", "billing"))
			join(t, e, "orders", "audit", "c", time.Minute)
			publish(t, e, "audit:eu", "x", "y")
			ensure(t, e, "gone", "g")
			require.NoError(t, e.DeleteGroup(ctx, "gone", "g"))

			topics, err := e.ListTopics(ctx)
			require.NoError(t, err)
			require.Equal(t, []backend.TopicInfo{
				{Name: "audit:eu", Groups: []string{}, Backlog: 2},
				{Name: "orders", Groups: []string{"audit", "billing"}},
			}, topics)
			names, err := e.TopicNames(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"audit:eu", "orders"}, names)
			for topic, want := range map[string]bool{"orders": true, "audit:eu": true, "gone": false, "nope": false} {
				got, err := e.HasTopic(ctx, topic)
				require.NoError(t, err)
				require.Equal(t, want, got, topic)
			}

			groups, err := e.ListGroups(ctx, "orders")
			require.NoError(t, err)
			require.Len(t, groups, 2)
			require.Equal(t, backend.GroupInfo{Topic: "orders", Name: "billing", Paused: true}, groups[1])
			audit := groups[0]
			require.Equal(t, "audit", audit.Name)
			require.True(t, audit.Ephemeral)
			require.False(t, audit.Paused)
			require.WithinDuration(t, e.Client().Time(ctx).Val().Add(time.Minute), audit.Expires, 5*time.Second)

			groups, err = e.ListGroups(ctx, "audit:eu")
			require.NoError(t, err)
			require.Empty(t, groups, "a backlog, no group")
			groups, err = e.ListGroups(ctx, "gone")
			require.NoError(t, err)
			require.Empty(t, groups, "a topic with no key")
			_, err = e.Topic(ctx, "nope")
			require.ErrorIs(t, err, backend.ErrTopicNotFound)
			_, err = e.Topic(ctx, "bad*name")
			require.ErrorIs(t, err, backend.ErrInvalidName)
		})
	}
}
