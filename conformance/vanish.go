package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// vanishTombstone is the TombstoneTTL the vanish cases ask for: short, so that the case sees
// it end.
const vanishTombstone = 3 * time.Second

// A group's state can vanish from Redis without anyone deleting it: a Redis that restarted
// empty, a failover to a replica that had not synced, FLUSHALL, another client's DEL. Running
// subscriptions register the group again and consume what is published afterwards; only an
// operator's delete, which leaves a tombstone for TombstoneTTL, stops them.
func testVanish(t *testing.T, f Factory) {
	run(t, f, "ForgottenGroupIsRegisteredAgain", Options{}, vanishRegisteredAgain)
	run(t, f, "ForgottenGroupsAllReceiveWhatFollows", Options{}, func(t *testing.T, h Harness) { vanishEveryGroup(t, h, false) })
	run(t, f, "ForgottenGroupsAllReceiveWhatAnotherProcessPublishes", Options{}, func(t *testing.T, h Harness) { vanishEveryGroup(t, h, true) })
	run(t, f, "ForgottenEphemeralGroupIsJoinedAgain", Options{}, vanishEphemeralJoinedAgain)
	run(t, f, "DeletedGroupStopsItsSubscriptionsUntilTheTombstoneEnds", Options{TombstoneTTL: vanishTombstone}, vanishDeletedStops)
	run(t, f, "DeletingAVanishedGroupStopsItsSubscriptions", Options{}, vanishThenDeleted)
}

// An operator deletes a group whose state had just vanished (or that its subscription had
// just registered again): either way the delete wins, and the subscription stops instead of
// registering the group again.
func vanishThenDeleted(t *testing.T, h Harness) {
	need(t, h, h.Forget != nil, "the Harness gives no Forget to delete a topic's keys with")
	a := adminOf(t, h)
	topic := topicName()
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	ch := subscribe(t, sub, topic)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	publish(t, pub, topic, newMessage("x"))
	receive(t, ch).Ack()

	require.NoError(t, h.Forget(topic))
	err := a.DeleteGroup(context.Background(), topic, backend.DefaultGroup)
	if err != nil {
		require.ErrorIs(t, err, backend.ErrGroupNotFound, "deleting a group that vanished")
	}
	requireClosed(t, ch)
	_, err = h.Backend.Claim(context.Background(), &backend.ClaimParams{Topic: topic, Group: backend.DefaultGroup,
		Consumer: "late", Count: 1, Lease: time.Minute})
	require.ErrorIs(t, err, backend.ErrGroupDeleted)
}

// Every key of the topic goes under a running subscription. What is published afterwards is
// delivered, what reached the backlog before the group was registered again included, and the
// group's Stats count the re-registration.
func vanishRegisteredAgain(t *testing.T, h Harness) {
	need(t, h, h.Forget != nil, "the Harness gives no Forget to delete a topic's keys with")
	topic := topicName()
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	r := &recorder{}
	consume(subscribe(t, sub, topic), r, 0, 2, nil)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	before := inOrder(h, newMessages(3)...)
	publish(t, pub, topic, before...)
	r.waitAll(t, uuids(before))
	requireSettled(t, h, topic, backend.DefaultGroup, 0)

	forgotAt := time.Now()
	require.NoError(t, h.Forget(topic))
	after := inOrder(h, newMessages(10)...)
	for _, m := range after {
		publish(t, pub, topic, m)
	}
	r.waitAll(t, append(uuids(before), uuids(after)...))
	s := requireSettled(t, h, topic, backend.DefaultGroup, 0)
	require.Equal(t, int64(1), s.Counters.Reregistered, "Stats count the re-registration once: %+v", s.Counters)
	require.WithinRange(t, s.ReregisteredAt, forgotAt.Add(-timeSlack), time.Now().Add(timeSlack))
}

// Two groups of a topic, each with a running subscription, and every key of the topic goes:
// both groups receive everything published afterwards, not only the one registered again
// first (which takes what waited in the backlog). The publisher runs in the subscribers'
// process, and publishes once a subscription registered its group again (a Watermill handler
// that publishes); or, with peer, in another process, at once. On a Partitioned backend a
// publisher knows the groups of the partitions it published to, so the messages share a key.
func vanishEveryGroup(t *testing.T, h Harness, peer bool) {
	need(t, h, h.Forget != nil, "the Harness gives no Forget to delete a topic's keys with")
	topic := topicName()
	groups := []string{"billing", "shipping"}
	recs := map[string]*recorder{}
	for _, g := range groups {
		recs[g] = &recorder{}
		consume(subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: g}), topic), recs[g], 0, 2, nil)
	}
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	if peer {
		var err error
		pub, err = pubsub.NewPublisher(peerOf(t, h), pubsub.PublisherConfig{}, logger)
		require.NoError(t, err)
		t.Cleanup(func() { _ = pub.Close() })
	}
	before := inOrder(h, newMessages(3)...)
	publish(t, pub, topic, before...)
	for _, g := range groups {
		recs[g].waitAll(t, uuids(before))
		requireSettled(t, h, topic, g, 0)
	}

	require.NoError(t, h.Forget(topic))
	if !peer {
		a := adminOf(t, h)
		require.True(t, poll(waitTimeout, func() bool {
			gs, err := a.ListGroups(context.Background(), topic)
			return err == nil && len(gs) > 0
		}), "no subscription registered its group again")
	}
	after := inOrder(h, newMessages(10)...)
	for _, m := range after {
		publish(t, pub, topic, m)
	}
	for _, g := range groups {
		recs[g].waitAll(t, append(uuids(before), uuids(after)...))
		s := requireSettled(t, h, topic, g, 0)
		require.Equal(t, int64(1), s.Counters.Reregistered, "group %s: %+v", g, s.Counters)
	}
}

// The same for an ephemeral group: its member joins it again.
func vanishEphemeralJoinedAgain(t *testing.T, h Harness) {
	need(t, h, h.Forget != nil, "the Harness gives no Forget to delete a topic's keys with")
	ephemeralOf(t, h)
	topic := topicName()
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Group: "replies", Ephemeral: true, Consumer: "c1"})
	ch := subscribe(t, sub, topic)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	r := &recorder{}
	consume(ch, r, 0, 1, nil)
	first := newMessage("first")
	waitJoined(t, h, topic, "replies")
	publish(t, pub, topic, first)
	r.waitAll(t, []string{first.UUID})

	require.NoError(t, h.Forget(topic))
	after := newMessages(5)
	publish(t, pub, topic, after...)
	r.waitAll(t, append([]string{first.UUID}, uuids(after)...))
	groups := listGroups(t, adminOf(t, h), topic)
	require.Len(t, groups, 1)
	require.True(t, groups[0].Ephemeral, "the group joined again is ephemeral")
}

// An operator's delete stops the group's subscriptions (their channel closes) and leaves a
// tombstone: a claim of the group fails with ErrGroupDeleted while it lasts, with ErrGroupLost
// (vanished, registered again by a subscription) once TombstoneTTL ended, and then the topic
// keeps no key.
func vanishDeletedStops(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic := topicName()
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	ch := subscribe(t, sub, topic)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	m := newMessage("x")
	publish(t, pub, topic, m)
	got := receive(t, ch)
	require.Equal(t, m.UUID, got.UUID)
	got.Ack()

	require.NoError(t, a.DeleteGroup(context.Background(), topic, backend.DefaultGroup))
	deletedAt := time.Now()
	requireClosed(t, ch)
	claim := func() error {
		_, err := h.Backend.Claim(context.Background(), &backend.ClaimParams{Topic: topic, Group: backend.DefaultGroup,
			Consumer: "late", Count: 1, Lease: time.Minute})
		return err
	}
	require.ErrorIs(t, claim(), backend.ErrGroupDeleted, "a claim under the tombstone")
	_, err := h.Backend.RegisterAgain(context.Background(), &backend.RegisterAgainParams{Topic: topic, Group: backend.DefaultGroup})
	require.ErrorIs(t, err, backend.ErrGroupDeleted, "RegisterAgain under the tombstone")

	require.True(t, poll(vanishTombstone+waitTimeout, func() bool { return !errors.Is(claim(), backend.ErrGroupDeleted) }),
		"the tombstone outlived TombstoneTTL")
	require.GreaterOrEqual(t, time.Since(deletedAt), vanishTombstone-timeSlack, "the tombstone ended before TombstoneTTL")
	require.ErrorIs(t, claim(), backend.ErrGroupLost, "a claim once the tombstone ended")
	if h.Keys != nil {
		require.True(t, poll(waitTimeout, func() bool { return len(topicKeys(t, h, topic)) == 0 }),
			"keys left after the tombstone ended: %v", topicKeys(t, h, topic))
	}
}

// requireClosed waits for ch to close, taking what is still in it.
func requireClosed(t *testing.T, ch <-chan *message.Message) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("the subscription did not stop within %v", waitTimeout)
		}
	}
}

// waitJoined waits until group is registered on topic.
func waitJoined(t *testing.T, h Harness, topic, group string) {
	t.Helper()
	a := adminOf(t, h)
	require.True(t, poll(waitTimeout, func() bool {
		gs, err := a.ListGroups(context.Background(), topic)
		return err == nil && len(gs) == 1 && gs[0].Name == group
	}), "the group %q was not registered", group)
}
