package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testStats(t *testing.T, f Factory) {
	run(t, f, "MatchReality", Options{}, statsMatchReality)
}

// Publish 10, claim 4, ack 2, nack 1 for an hour: Stats tells exactly that story.
func statsMatchReality(t *testing.T, h Harness) {
	ctx := context.Background()
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	publish(t, pub, topic, newMessages(10)...)
	ds := claimN(t, h, topic, group, "worker", 4, time.Hour)

	ar, err := h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "worker", Items: held(ds[:2]...)})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Acked: 2}, ar)
	nr, err := h.Backend.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "worker",
		Items: []backend.NackItem{{ID: ds[2].ID, Attempt: ds[2].Attempt, Delay: time.Hour, Reason: "later"}}})
	require.NoError(t, err)
	require.Equal(t, backend.NackResult{Requeued: 1}, nr)

	s := stats(t, h, topic, group)
	require.Equal(t, topic, s.Topic)
	require.Equal(t, group, s.Group)
	require.Equal(t, counts{Ready: 6, Delayed: 1, Pending: 1}, countsOf(s))
	require.Equal(t, backend.Counters{Published: 10, Claimed: 4, Acked: 2, Nacked: 1}, s.Counters)

	// Ages grow with time (measured on the Redis clock).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, err := h.Backend.Stats(ctx, &backend.StatsParams{Topic: topic, Group: group})
		if !assert.NoError(c, err) {
			return
		}
		assert.GreaterOrEqual(c, s.OldestPendingAge, 100*time.Millisecond)
		assert.GreaterOrEqual(c, s.OldestReadyAge, 100*time.Millisecond)
		assert.Less(c, s.OldestPendingAge, time.Minute)
		assert.Less(c, s.OldestReadyAge, time.Minute)
	}, waitTimeout, tick)

	_, err = h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "worker", Items: held(ds[3])})
	require.NoError(t, err)
	s = stats(t, h, topic, group)
	require.Equal(t, counts{Ready: 6, Delayed: 1}, countsOf(s))
	require.Zero(t, s.OldestPendingAge, "nothing is pending")
}
