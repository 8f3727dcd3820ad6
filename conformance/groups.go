package conformance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testGroups(t *testing.T, f Factory) {
	run(t, f, "EveryGroupGetsEveryMessage", Options{}, groupsFanOut)
	run(t, f, "NewGroupStartsWithNextPublish", Options{}, groupsStartNew)
	run(t, f, "NewGroupReplaysFromOldest", Options{}, groupsReplay)
}

// Two groups each receive every message; the two subscribers of one group split its
// messages between them, each message going to one of them.
func groupsFanOut(t *testing.T, h Harness) {
	const total = 50
	topic := topicName()
	type member struct {
		group string
		r     *recorder
	}
	r1, r2 := &recorder{}, &recorder{}
	members := []member{{"g1", r1}, {"g1", r1}, {"g2", r2}}
	for i, m := range members {
		sub := newSubscriber(t, h, pubsub.SubscriberConfig{Group: m.group})
		require.NoError(t, sub.SubscribeInitialize(topic))
		consume(subscribe(t, sub, topic), m.r, i, 1, nil)
	}

	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msgs := newMessages(total)
	publish(t, pub, topic, msgs...)

	for _, g := range []struct {
		name string
		r    *recorder
	}{{"g1", r1}, {"g2", r2}} {
		g.r.waitAll(t, uuids(msgs))
		s := requireSettled(t, h, topic, g.name, 0)
		require.Equal(t, backend.Counters{Published: total, Claimed: total, Acked: total}, s.Counters, "group %s", g.name)
		for id, n := range g.r.perUUID() {
			require.Equal(t, 1, n, "group %s handled message %s %d times", g.name, id, n)
		}
	}

	groups, err := h.Backend.GroupNames(context.Background(), topic)
	require.NoError(t, err)
	slices.Sort(groups)
	require.Equal(t, []string{"g1", "g2"}, groups, "registered groups")
}

// A group created after a message was published to a group of the topic starts with the
// next one (unless it asks for replay); the earlier message stays with the group it went to.
// (The first group of a topic takes its backlog instead: see the Backlog cases.)
func groupsStartNew(t *testing.T, h Harness) {
	topic := topicName()
	ensureGroup(t, h, topic, "first")
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	old, fresh := newMessage("before the group"), newMessage("after the group")
	publish(t, pub, topic, old)

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Group: "late"})
	require.NoError(t, sub.SubscribeInitialize(topic))
	ch := subscribe(t, sub, topic)
	publish(t, pub, topic, fresh)

	got := receive(t, ch)
	require.Equal(t, fresh.UUID, got.UUID, "the new group received a message published before it existed")
	require.True(t, got.Ack())
	noMessage(t, ch, 300*time.Millisecond)
	requireSettled(t, h, topic, "late", 0)
	require.Equal(t, counts{Ready: 2}, countsOf(stats(t, h, topic, "first")), "the group that existed lost a message")
}

// Where a backend keeps history, a new group can start from the oldest retained message,
// one that went to another group before it existed.
func groupsReplay(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().NewGroupReplay {
		t.Skip("the backend declares no Capabilities.NewGroupReplay")
	}
	topic := topicName()
	ensureGroup(t, h, topic, "first")
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	old := inOrder(h, newMessage("old"))[0]
	publish(t, pub, topic, old)

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Group: "replay", FromOldest: true})
	require.NoError(t, sub.SubscribeInitialize(topic))
	ch := subscribe(t, sub, topic)
	fresh := inOrder(h, newMessage("new"))[0]
	publish(t, pub, topic, fresh)

	for _, want := range []string{old.UUID, fresh.UUID} {
		got := receive(t, ch)
		require.Equal(t, want, got.UUID)
		require.True(t, got.Ack())
	}
	requireSettled(t, h, topic, "replay", 0)
}
