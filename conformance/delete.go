package conformance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testDelete(t *testing.T, f Factory) {
	run(t, f, "GroupWhileSubscribed", Options{}, deleteGroupWhileSubscribed)
	run(t, f, "TopicWhileAnotherProcessPublishes", Options{}, deleteTopicWhilePublished)
}

// A group deleted while its subscriber runs, holding messages in every state: the
// subscription's channel closes, the handler's late ack is harmless, no key of the group
// remains, later publishes do not reach it, and the other group of the topic and the group
// of another topic are untouched. A group registered again under the name starts empty.
func deleteGroupWhileSubscribed(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic, other := topicName(), topicName()
	const doomed, kept = "doomed", "kept"

	// The doomed group's handler dead-letters "poison" (MaxDeliveries 1) and holds "hold"
	// until after the delete, so the group has a dead, a delayed and pending messages (the
	// held one and those prefetched behind it).
	holding, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	rDoomed := &recorder{}
	doomedCh := subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: doomed, MaxDeliveries: 1}), topic)
	doomedDone := make(chan struct{})
	go func() {
		defer close(doomedDone)
		for msg := range doomedCh {
			rDoomed.add(msg, 0)
			switch string(msg.Payload) {
			case "poison":
				msg.Nack()
			case "hold":
				holdOnce.Do(func() { close(holding) })
				<-release
				msg.Ack()
			default:
				msg.Ack()
			}
		}
	}()
	rKept, rOther := &recorder{}, &recorder{}
	consume(subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: kept}), topic), rKept, 0, 1, nil)
	consume(subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: kept}), other), rOther, 0, 1, nil)

	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	later := newMessage("in an hour")
	pubsub.SetDelay(later, time.Hour)
	first := append(newMessages(5), newMessage("poison"), later, newMessage("hold"))
	first = inOrder(h, append(first, newMessages(5)...)...) // "poison" is handled before "hold"
	publish(t, pub, topic, first...)
	otherMsgs := newMessages(10)
	publish(t, pub, other, otherMsgs...)
	waitDone(t, holding, `the doomed group's handler holding "hold"`)
	due := slices.DeleteFunc(slices.Clone(first), func(m *message.Message) bool { return m == later })
	rKept.waitAll(t, uuids(due))
	rOther.waitAll(t, uuids(otherMsgs))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, err := h.Backend.Stats(ctx, &backend.StatsParams{Topic: topic, Group: doomed})
		if assert.NoError(c, err) {
			assert.Equal(c, int64(1), s.Delayed)
			assert.Equal(c, int64(1), s.Dead)
			assert.Positive(c, s.Pending)
		}
	}, waitTimeout, tick, "the doomed group should hold a delayed, a dead and pending messages")
	keptBefore := requireSteadyState(t, h, topic, kept)
	otherBefore := requireSteadyState(t, h, other, kept)

	require.NoError(t, a.DeleteGroup(ctx, topic, doomed))
	close(release)
	waitDone(t, doomedDone, "the subscription of the deleted group closing")
	seenByDoomed := rDoomed.count()
	require.ErrorIs(t, a.DeleteGroup(ctx, topic, doomed), backend.ErrGroupNotFound, "DeleteGroup again")
	require.Equal(t, []string{kept}, groupNames(listGroups(t, a, topic)))
	require.Equal(t, backend.TopicInfo{Name: topic, Groups: []string{kept}}, topicInfo(t, a, topic))
	requireNoGroupKeys(t, h, topic, doomed)
	require.Equal(t, keptBefore, stateOf(stats(t, h, topic, kept)), "the other group of the topic changed")
	require.Equal(t, otherBefore, stateOf(stats(t, h, other, kept)), "the group of another topic changed")

	more, moreOther := newMessages(5), newMessages(5)
	publish(t, pub, topic, more...)
	publish(t, pub, other, moreOther...)
	rKept.waitAll(t, uuids(more))
	rOther.waitAll(t, uuids(moreOther))
	requireNoGroupKeys(t, h, topic, doomed)
	require.Equal(t, seenByDoomed, rDoomed.count(), "the deleted group's subscription got a message after it closed")

	ensureGroup(t, h, topic, doomed)
	s := stats(t, h, topic, doomed)
	require.Equal(t, counts{}, countsOf(s), "a group registered again kept the deleted one's messages")
	require.Equal(t, backend.Counters{}, s.Counters, "a group registered again kept the deleted one's counters")
	publishDirect(t, h, topic, 1)
	require.Equal(t, counts{Ready: 1}, countsOf(stats(t, h, topic, doomed)))
}
