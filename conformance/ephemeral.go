package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testEphemeral(t *testing.T, f Factory) {
	run(t, f, "LastLeaveDeletesGroupAndKeys", Options{}, ephemeralJoinLeave)
	run(t, f, "DurableIsNotEphemeral", Options{}, ephemeralDurable)
	run(t, f, "ExpiredGroupGoesAtNextPublish", Options{}, func(t *testing.T, h Harness) {
		if h.Backend.Capabilities().Partitioned {
			t.Skip("the backend declares Capabilities.Partitioned: a publish sweeps the partitions it writes to, not the topic")
		}
		ephemeralExpired(t, h, 1, func(topic string) { publishDirect(t, h, topic, 1) })
	})
	run(t, f, "ExpiredGroupGoesAtNextReclaim", Options{}, func(t *testing.T, h Harness) {
		ephemeralExpired(t, h, 0, func(topic string) {
			_, err := h.Backend.Reclaim(context.Background(), &backend.ReclaimParams{Topic: topic, Group: "durable"})
			require.NoError(t, err)
		})
	})
	run(t, f, "AbandonedTopicLeavesNoKey", Options{}, ephemeralAbandoned)
	run(t, f, "SubscriberCloseLeavesNoKey", Options{}, ephemeralSubscriberClose)
}

func join(t *testing.T, e backend.Ephemeral, topic, group, consumer string, ttl time.Duration) {
	t.Helper()
	require.NoError(t, e.Join(context.Background(), &backend.JoinParams{Topic: topic, Group: group, Consumer: consumer, TTL: ttl}))
}

func leave(t *testing.T, e backend.Ephemeral, topic, group, consumer string) {
	t.Helper()
	require.NoError(t, e.Leave(context.Background(), &backend.LeaveParams{Topic: topic, Group: group, Consumer: consumer}))
}

// An ephemeral group is listed as such, with when its membership runs out, and receives
// messages like any group; it stays while a member is left, and the last member's Leave
// deletes it and, on a topic with no other group and no backlog, every key of the topic.
// Its claims then fail with ErrGroupLost (no operator deleted it, so no tombstone says
// deleted), and a late ack creates nothing.
func ephemeralJoinLeave(t *testing.T, h Harness) {
	e, a := ephemeralOf(t, h), adminOf(t, h)
	ctx := context.Background()
	topic, group := topicName(), "replies"
	before := time.Now()
	join(t, e, topic, group, "c1", time.Minute)
	join(t, e, topic, group, "c2", time.Minute)
	after := time.Now()
	groups := listGroups(t, a, topic)
	require.Len(t, groups, 1)
	require.Equal(t, group, groups[0].Name)
	require.True(t, groups[0].Ephemeral, "GroupInfo.Ephemeral")
	require.WithinRange(t, groups[0].Expires, before.Add(time.Minute-timeSlack), after.Add(time.Minute+timeSlack))

	publishDirect(t, h, topic, 3)
	d := claimN(t, h, topic, group, "c1", 1, time.Minute)[0]
	leave(t, e, topic, group, "c1")
	require.Equal(t, []string{group}, groupNames(listGroups(t, a, topic)), "the group went with a member left")
	s := stats(t, h, topic, group)
	require.Equal(t, int64(3), s.Ready+s.Pending, "the group lost messages when a member left: %+v", countsOf(s))

	leave(t, e, topic, group, "c2")
	require.Empty(t, listGroups(t, a, topic), "the last member's Leave left the group")
	require.Empty(t, topicKeys(t, h, topic), "the last member's Leave left keys of a topic with no other group")
	requireTopicGone(t, a, topic)
	_, err := h.Backend.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: "c2", Count: 1, Lease: time.Minute})
	require.ErrorIs(t, err, backend.ErrGroupLost, "a claim of an ephemeral group its members left")
	_, err = h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "c1", Items: held(d)})
	require.NoError(t, err, "a late ack of a deleted group's message")
	require.Empty(t, topicKeys(t, h, topic), "a late ack created keys of a deleted group")
}

// Join refuses a group registered as durable, which stays durable.
func ephemeralDurable(t *testing.T, h Harness) {
	e, a := ephemeralOf(t, h), adminOf(t, h)
	topic := topicName()
	ensureGroup(t, h, topic, "durable")
	err := e.Join(context.Background(), &backend.JoinParams{Topic: topic, Group: "durable", Consumer: "c", TTL: time.Minute})
	require.ErrorIs(t, err, backend.ErrNotEphemeral)
	require.Equal(t, []backend.GroupInfo{{Topic: topic, Name: "durable"}}, listGroups(t, a, topic))
}

// A membership not renewed runs out: the group is deleted by the next publish, or Reclaim,
// on its topic (sweep), not before, and leaves no key; the durable group of the topic keeps
// every message.
// sweeps is how many messages sweep publishes to the topic.
func ephemeralExpired(t *testing.T, h Harness, sweeps int, sweep func(topic string)) {
	const ttl = 500 * time.Millisecond
	e, a := ephemeralOf(t, h), adminOf(t, h)
	topic := topicName()
	ensureGroup(t, h, topic, "durable")
	joined := time.Now()
	join(t, e, topic, "eph", "c", ttl)
	joinEnd := time.Now()
	publishDirect(t, h, topic, 1)
	if time.Now().Before(joined.Add(ttl - clockSlack)) { // the membership surely still ran
		require.Equal(t, []string{"durable", "eph"}, groupNames(listGroups(t, a, topic)), "a live ephemeral group went")
		require.Equal(t, counts{Ready: 1}, countsOf(stats(t, h, topic, "eph")))
	}

	sleepUntil(joinEnd.Add(ttl + 50*time.Millisecond))
	sweep(topic)
	require.Equal(t, []string{"durable"}, groupNames(listGroups(t, a, topic)), "an expired ephemeral group outlived the sweep")
	requireNoGroupKeys(t, h, topic, "eph")
	publishDirect(t, h, topic, 1)
	require.Equal(t, counts{Ready: int64(2 + sweeps)}, countsOf(stats(t, h, topic, "durable")),
		"the durable group should keep every message published")
	requireNoGroupKeys(t, h, topic, "eph")
}

// A topic whose groups are all ephemeral, and whose members all stopped renewing (their
// processes died), leaves no key once the memberships ran out, with nobody touching it. A
// durable group registered on such a topic keeps the topic's keys.
func ephemeralAbandoned(t *testing.T, h Harness) {
	const ttl = time.Second
	e, a := ephemeralOf(t, h), adminOf(t, h)
	abandoned, kept := topicName(), topicName()
	joined := time.Now()
	join(t, e, abandoned, "eph", "c", ttl)
	join(t, e, kept, "eph", "c", ttl)
	joinEnd := time.Now()
	publishDirect(t, h, abandoned, 2)
	ensureGroup(t, h, kept, "durable")
	publishDirect(t, h, kept, 2)
	ks := topicKeys(t, h, abandoned)
	if time.Now().Before(joined.Add(ttl - clockSlack)) {
		require.NotEmpty(t, ks, "the keys of a topic with a live ephemeral group expired")
	}

	requireNoKeys(t, h, abandoned, "an abandoned ephemeral topic")
	requireTopicGone(t, a, abandoned)

	sleepUntil(joinEnd.Add(ttl + 50*time.Millisecond))
	require.Equal(t, counts{Ready: 2}, countsOf(stats(t, h, kept, "durable")), "a durable group lost its messages")
	if h.Backend.Capabilities().Partitioned { // a publish sweeps only the partitions it writes to
		_, err := h.Backend.Reclaim(context.Background(), &backend.ReclaimParams{Topic: kept, Group: "durable"})
		require.NoError(t, err)
	}
	publishDirect(t, h, kept, 1)
	require.Equal(t, []string{"durable"}, groupNames(listGroups(t, a, kept)))
	require.Equal(t, counts{Ready: 3}, countsOf(stats(t, h, kept, "durable")))
}

// Subscribers with SubscriberConfig.Ephemeral share their group while any runs; closing the
// last one deletes the group and leaves no key of a topic that has no other group.
func ephemeralSubscriberClose(t *testing.T, h Harness) {
	ephemeralOf(t, h)
	a := adminOf(t, h)
	topic := topicName()
	cfg := pubsub.SubscriberConfig{Group: "instance-1", Ephemeral: true}
	r := &recorder{}
	subs := make([]*pubsub.Subscriber, 2)
	for i := range subs {
		subs[i] = newSubscriber(t, h, cfg)
		consume(subscribe(t, subs[i], topic), r, i, 1, nil)
	}
	groups := listGroups(t, a, topic)
	require.Len(t, groups, 1)
	require.True(t, groups[0].Ephemeral, "the group of an ephemeral subscriber is listed durable")

	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msgs := newMessages(6)
	publish(t, pub, topic, msgs...)
	r.waitAll(t, uuids(msgs))
	require.NoError(t, subs[0].Close())
	require.Equal(t, []string{cfg.Group}, groupNames(listGroups(t, a, topic)), "the group went with a subscriber left")
	more := newMessage("to the one left")
	publish(t, pub, topic, more)
	r.waitAll(t, []string{more.UUID})

	require.NoError(t, subs[1].Close())
	requireNoKeys(t, h, topic, "the last ephemeral subscriber closed")
	requireTopicGone(t, a, topic)
}
