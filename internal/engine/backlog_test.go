package engine_test

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// Messages published before any group wait in the topic's backlog, which expires while no
// group comes; the first group to register takes them as if it had been there, whatever its
// name, and its keys no longer expire. A second group starts with the next publish.
func TestTheFirstGroupTakesTheBacklog(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			publish(t, e, "t", "a", "b")
			_, err := e.Publish(ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{
				{Envelope: adaptertest.Envelope("later"), Delay: time.Hour}}})
			require.NoError(t, err)
			topic, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, backend.TopicInfo{Name: "t", Groups: []string{}, Backlog: 3}, topic)
			require.Empty(t, groupsOf(t, e, "t"), "no phantom group")
			k := e.Keys("t", "first")
			for _, key := range []string{k.Meta(), k.Bodies()} {
				require.Positive(t, pttl(t, e, key), "%s expires with the backlog", key)
			}

			require.NoError(t, e.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "t", Group: "first"}))
			ensure(t, e, "t", "second")
			publish(t, e, "t", "c")
			require.Equal(t, []string{"a", "b", "c"}, adaptertest.Payloads(claim(t, e, "t", "first", "w", 10)))
			require.Equal(t, []string{"c"}, adaptertest.Payloads(claim(t, e, "t", "second", "w", 10)))
			s := stats(t, e, "t", "first")
			require.EqualValues(t, 1, s.Delayed, "the delayed message came along")
			require.EqualValues(t, 4, s.Counters.Published, "the backlog counts as published to the group")
			for _, key := range append(e.BacklogKeys("t"), k.Meta(), k.Bodies(), k.Pending()) {
				require.Less(t, pttl(t, e, key), time.Duration(0), "%s: gone, or no expiry", key)
			}
			topic, err = e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, backend.TopicInfo{Name: "t", Groups: []string{"first", "second"}}, topic)
		})
	}
}

// The backlog keeps at most BacklogLimit messages: a publish beyond it drops the oldest and
// frees their bodies, so the first group gets the newest ones.
func TestTheBacklogIsBounded(t *testing.T) {
	t.Parallel()
	for name, e := range backendsWith(t, backend.Options{BacklogLimit: 3}) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			publish(t, e, "t", "1", "2", "3", "4", "5")
			publish(t, e, "t", "6")
			topic, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.EqualValues(t, 3, topic.Backlog)
			require.EqualValues(t, 3, e.Client().HLen(ctx, e.Keys("t", "g").Bodies()).Val(), "dropped bodies are freed")
			ensure(t, e, "t", "g")
			require.Equal(t, []string{"4", "5", "6"}, adaptertest.Payloads(claim(t, e, "t", "g", "w", 10)))
		})
	}
}

// A backlog nobody registers for is deleted by Redis BacklogTTL after the last publish, with
// every key of its topic; the topic created again issues IDs above every one it issued before,
// so a late ack of an old delivery can never complete a new message.
func TestTheBacklogExpires(t *testing.T) {
	t.Parallel()
	for name, e := range backendsWith(t, backend.Options{BacklogTTL: 50 * time.Millisecond}) {
		t.Run(name, func(t *testing.T) {
			old := publish(t, e, "t", "a", "b")
			require.NotEmpty(t, tagKeys(t, e, "t"))
			require.Eventually(t, func() bool { return len(tagKeys(t, e, "t")) == 0 }, 5*time.Second, 10*time.Millisecond,
				"the backlog's keys expire")
			_, err := e.Topic(t.Context(), "t")
			require.ErrorIs(t, err, backend.ErrTopicNotFound)
			requireAllAbove(t, publish(t, e, "t", "c"), old, "a topic created again continues above its earlier IDs")
		})
	}
}
