package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// The backlog rule (backend.BacklogLimitDefault): what is published to a topic with no group
// waits in the topic's backlog, bounded in size and in age, for the first group registered.
func testBacklog(t *testing.T, f Factory) {
	run(t, f, "FirstGroupTakesIt", Options{}, backlogFirstGroup)
	run(t, f, "Bounded", Options{BacklogLimit: backlogLimit}, backlogBounded)
	run(t, f, "Refused", Options{BacklogLimit: backlogLimit, BacklogFull: backend.BacklogRefuse}, backlogRefused)
	run(t, f, "Expires", Options{BacklogTTL: backlogTTL}, backlogExpires)
}

const (
	backlogLimit = 5
	backlogTTL   = time.Second
)

// Messages published before any group exist wait in the backlog, shown by the Admin; the
// first group registered, whatever its name, takes them as if it had been registered before
// (a delayed one stays delayed); a second group does not get them.
func backlogFirstGroup(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic := topicName()
	ids := publishDirectInOrder(t, h, topic, 3)
	publishOne(t, h, topic, backend.OutMessage{Envelope: backend.Envelope{UUID: watermill.NewUUID()}, Delay: time.Hour})

	want := backend.TopicInfo{Name: topic, Backlog: 4}
	require.Equal(t, want, topicInfo(t, a, topic), "Topic with a backlog")
	topics, err := a.ListTopics(context.Background())
	require.NoError(t, err)
	require.Len(t, topics, 1)
	require.Equal(t, want, normalTopic(topics[0]), "ListTopics with a backlog")
	require.Empty(t, listGroups(t, a, topic), "a publish registered a group")

	ensureGroup(t, h, topic, "whoever")
	require.Equal(t, counts{Ready: 3, Delayed: 1}, countsOf(stats(t, h, topic, "whoever")), "what the first group took")
	require.Equal(t, backend.TopicInfo{Name: topic, Groups: []string{"whoever"}}, topicInfo(t, a, topic))
	ensureGroup(t, h, topic, "second")
	require.Equal(t, counts{}, countsOf(stats(t, h, topic, "second")), "a second group got the backlog")

	ds := claimN(t, h, topic, "whoever", "c", 3, time.Minute)
	claimed := make([]string, len(ds))
	for i, d := range ds {
		claimed[i] = d.ID
		require.Equal(t, 1, d.Attempt)
	}
	require.ElementsMatch(t, ids, claimed, "the backlog's delivery IDs")
}

// A backlog keeps at most BacklogLimit messages, the newest: publishes beyond it, one at a
// time or in a batch, drop the oldest, and say so: the publish's result and the topic's
// TopicInfo count the drops. A group's own messages are not bounded by it.
func backlogBounded(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic := topicName()
	var ids []string
	for range 4 {
		ids = append(ids, publishDirectInOrder(t, h, topic, 1)...)
	}
	res, err := h.Backend.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: inOrderOut(h, outMessages(4))})
	require.NoError(t, err)
	require.Equal(t, int64(3), res.BacklogDropped, "a batch of 4 onto a backlog of 4 with limit %d drops 3", backlogLimit)
	ids = append(ids, res.IDs...)
	info := topicInfo(t, a, topic)
	require.Equal(t, int64(backlogLimit), info.Backlog,
		"a backlog of 8 publishes with Options.BacklogLimit %d (does the Factory pass Options.BacklogLimit to the backend?)", backlogLimit)
	require.Equal(t, int64(3), info.BacklogDropped, "TopicInfo counts the drops")
	res, err = h.Backend.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: inOrderOut(h, outMessages(1))})
	require.NoError(t, err)
	require.Equal(t, int64(1), res.BacklogDropped)
	ids = append(ids, res.IDs...)
	require.Equal(t, int64(4), topicInfo(t, a, topic).BacklogDropped, "the count adds up")

	ensureGroup(t, h, topic, "g")
	require.Equal(t, counts{Ready: backlogLimit}, countsOf(stats(t, h, topic, "g")))
	ds := claimN(t, h, topic, "g", "c", backlogLimit, time.Minute)
	claimed := make([]string, len(ds))
	for i, d := range ds {
		claimed[i] = d.ID
	}
	require.ElementsMatch(t, ids[len(ids)-backlogLimit:], claimed, "the backlog kept other than the newest")

	res, err = h.Backend.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: inOrderOut(h, outMessages(2*backlogLimit))})
	require.NoError(t, err)
	require.Zero(t, res.BacklogDropped, "a topic with a group drops nothing")
	require.Equal(t, counts{Ready: 2 * backlogLimit, Pending: backlogLimit}, countsOf(stats(t, h, topic, "g")))
	require.Equal(t, int64(4), topicInfo(t, a, topic).BacklogDropped, "the topic's drops stay counted")
}

// Under BacklogRefuse a full backlog refuses a publish it cannot hold whole, with a
// *BacklogFullError, and stores nothing of it: the first group gets exactly what was accepted.
func backlogRefused(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic := topicName()
	ids := publishDirectInOrder(t, h, topic, backlogLimit-1)
	_, err := h.Backend.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: inOrderOut(h, outMessages(2))})
	var full *backend.BacklogFullError
	require.ErrorAs(t, err, &full, "a batch the backlog cannot hold (does the Factory pass Options.BacklogFull?)")
	require.ErrorIs(t, err, backend.ErrBacklogFull)
	require.Equal(t, topic, full.Topic)
	require.Equal(t, backlogLimit, full.Limit)
	ids = append(ids, publishDirectInOrder(t, h, topic, 1)...)
	_, err = h.Backend.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: inOrderOut(h, outMessages(1))})
	require.ErrorIs(t, err, backend.ErrBacklogFull, "a full backlog refuses one more")
	info := topicInfo(t, a, topic)
	require.Equal(t, int64(backlogLimit), info.Backlog)
	require.Zero(t, info.BacklogDropped, "a refusing backlog drops nothing")

	ensureGroup(t, h, topic, "g")
	ds := claimN(t, h, topic, "g", "c", backlogLimit, time.Minute)
	claimed := make([]string, len(ds))
	for i, d := range ds {
		claimed[i] = d.ID
	}
	require.ElementsMatch(t, ids, claimed, "the first group got other than what the backlog accepted")
	publishDirectInOrder(t, h, topic, 2*backlogLimit) // a topic with a group refuses nothing
}

// A backlog's keys expire BacklogTTL after its last publish (each publish restarts the
// clock), leaving no key of the topic; a topic whose backlog a group took never expires.
func backlogExpires(t *testing.T, h Harness) {
	a := adminOf(t, h)
	abandoned, adopted := topicName(), topicName()
	first := time.Now()
	publishDirectInOrder(t, h, abandoned, 2)
	firstEnd := time.Now()
	publishDirectInOrder(t, h, adopted, 2)
	ensureGroup(t, h, adopted, "g")
	require.NotEmpty(t, topicKeys(t, h, abandoned))

	sleepUntil(first.Add(backlogTTL / 2))
	last := time.Now()
	publishDirectInOrder(t, h, abandoned, 1)
	// Not before: a read of the keys that ended before last + TTL must find them, and one
	// that started after the first publish's TTL ran out shows that the second restarted it.
	renewed := false
	for {
		start := time.Now()
		ks := topicKeys(t, h, abandoned)
		end := time.Now()
		if end.After(last.Add(backlogTTL - clockSlack)) {
			break
		}
		require.NotEmpty(t, ks, "the backlog expired %v after its last publish, before Options.BacklogTTL %v", end.Sub(last), backlogTTL)
		renewed = renewed || start.After(firstEnd.Add(backlogTTL+clockSlack))
		time.Sleep(tick)
	}
	if !renewed {
		t.Logf("no read of the keys fell between %v after the first publish and %v after the last: the restart of the clock went unchecked", backlogTTL, backlogTTL)
	}
	requireNoKeys(t, h, abandoned, "a backlog past Options.BacklogTTL (does the Factory pass it to the backend?)")
	requireTopicGone(t, a, abandoned)

	require.NotEmpty(t, topicKeys(t, h, adopted))
	require.Equal(t, counts{Ready: 2}, countsOf(stats(t, h, adopted, "g")), "a topic with a group lost its messages past BacklogTTL")
}
