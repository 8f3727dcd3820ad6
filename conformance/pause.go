package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testPause(t *testing.T, f Factory) {
	run(t, f, "WhileSubscribed", Options{}, pauseWhileSubscribed)
	run(t, f, "ClaimReturnsNothing", Options{}, pauseClaim)
}

// A group paused while its subscriber runs gets nothing, though publishes still store its
// messages (Stats.Ready grows), while another group of the topic goes on receiving; resumed,
// it gets every one of them, once.
func pauseWhileSubscribed(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic := topicName()
	const paused, running = "paused", "running"
	rPaused, rRunning := &recorder{}, &recorder{}
	consume(subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: paused}), topic), rPaused, 0, 1, nil)
	consume(subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: running}), topic), rRunning, 0, 1, nil)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	warm := newMessage("before the pause")
	publish(t, pub, topic, warm)
	rPaused.waitAll(t, []string{warm.UUID})
	rRunning.waitAll(t, []string{warm.UUID})
	requireSettled(t, h, topic, paused, 0)

	require.NoError(t, a.PauseGroup(ctx, topic, paused))
	require.NoError(t, a.PauseGroup(ctx, topic, paused), "PauseGroup is idempotent")
	const total = 20
	msgs := newMessages(total)
	publish(t, pub, topic, msgs...)
	rRunning.waitAll(t, uuids(msgs))
	requireCounts(t, h, topic, paused, counts{Ready: total})
	never(t, time.Second, func() bool { return rPaused.count() > 1 }, "a paused group got a message")
	s := requireCounts(t, h, topic, paused, counts{Ready: total})
	require.True(t, s.Paused, "Stats.Paused of a paused group")
	for _, g := range listGroups(t, a, topic) {
		require.Equal(t, g.Name == paused, g.Paused, "GroupInfo.Paused of group %s", g.Name)
	}

	require.NoError(t, a.ResumeGroup(ctx, topic, paused))
	require.NoError(t, a.ResumeGroup(ctx, topic, paused), "ResumeGroup is idempotent")
	rPaused.waitAll(t, uuids(msgs))
	s = requireSettled(t, h, topic, paused, 0)
	require.False(t, s.Paused)
	require.Equal(t, backend.Counters{Published: total + 1, Claimed: total + 1, Acked: total + 1}, s.Counters)
	for id, n := range rPaused.perUUID() {
		require.Equal(t, 1, n, "message %s delivered %d times", id, n)
	}
	requireSettled(t, h, topic, running, 0)
}

// Claims of a paused group return nothing, blocking or not, and move nothing out of ready;
// the group's messages are claimed again once it is resumed.
func pauseClaim(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 3)
	require.NoError(t, a.PauseGroup(ctx, topic, group))

	for _, block := range []time.Duration{0, 300 * time.Millisecond} {
		ds, err := h.Backend.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: "c", Count: 3, Lease: time.Minute, Block: block})
		require.NoError(t, err, "a claim on a paused group (Block %v)", block)
		require.Empty(t, ds, "a claim on a paused group (Block %v) returned messages", block)
	}
	// A blocking claim that a publish wakes while the group is paused takes nothing either.
	woken := make(chan []backend.Delivery, 1)
	go func() {
		ds, _ := h.Backend.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: "c", Count: 3, Lease: time.Minute, Block: time.Second})
		woken <- ds
	}()
	publishDirect(t, h, topic, 1)
	select {
	case ds := <-woken:
		require.Empty(t, ds, "a blocking claim on a paused group returned messages")
	case <-time.After(waitTimeout):
		require.FailNow(t, "a blocking claim did not return")
	}
	s := stats(t, h, topic, group)
	require.Equal(t, counts{Ready: 4}, countsOf(s), "a claim on a paused group moved a message")
	require.Zero(t, s.Counters.Claimed)

	require.NoError(t, a.ResumeGroup(ctx, topic, group))
	claimN(t, h, topic, group, "c", 4, time.Minute)
}
