package conformance

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// testPriority checks Capabilities.Priorities as users of BullMQ priorities or Sidekiq
// priority queues expect it: among the messages that are due, higher priority first, and
// due order within a priority; a priority never makes a message early.
func testPriority(t *testing.T, f Factory) {
	run(t, f, "HigherPriorityFirstAmongDue", Options{}, priorityAmongDue)
	run(t, f, "DelayedHighPriorityOvertakesDueBacklog", Options{}, priorityOvertakesBacklog)
	run(t, f, "IgnoredWithoutTheCapability", Options{}, priorityIgnored)
}

// priorityMessage is one message of a priority test: its priority and delay.
type priorityMessage struct {
	priority int
	delay    time.Duration
}

// publishPriorities publishes one batch (one Redis "now", so due order is exactly the order
// of delay, then position) whose payloads are the positions, and returns the positions in the
// order the contract delivers them once all are due: higher priority first, then earlier due
// time, then publish order.
func publishPriorities(t *testing.T, h Harness, pub *pubsub.Publisher, topic string, batch []priorityMessage) []int {
	t.Helper()
	msgs := inOrder(h, newMessages(len(batch))...)
	for i, m := range batch {
		pubsub.SetPriority(msgs[i], m.priority)
		pubsub.SetDelay(msgs[i], m.delay)
	}
	publish(t, pub, topic, msgs...)
	want := make([]int, len(batch))
	for i := range want {
		want[i] = i
	}
	slices.SortStableFunc(want, func(a, b int) int {
		if pa, pb := batch[a].priority, batch[b].priority; pa != pb {
			return pb - pa
		}
		return int(batch[a].delay - batch[b].delay)
	})
	return want
}

// A batch of messages with random priorities and random short delays waits until every one
// is due; a subscriber started then gets them by priority, higher first, and in due order
// within a priority (publish order among equal due times), although many low-priority ones
// were due long before the high-priority ones. One more message has the top priority but is
// due in an hour: it is never delivered early.
func priorityAmongDue(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().Priorities {
		t.Skip("the backend declares no Capabilities.Priorities")
	}
	const total, maxDelayMs = 120, 150
	levels := []int{-1, 0, 0, 0, 3} // mostly the default, as a real backlog would be
	rng := rand.New(rand.NewPCG(orderSeed, 15))
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	batch := make([]priorityMessage, total, total+1)
	for i := range batch {
		batch[i] = priorityMessage{priority: levels[rng.IntN(len(levels))], delay: time.Duration(rng.IntN(maxDelayMs+1)) * time.Millisecond}
	}
	batch = append(batch, priorityMessage{priority: 10, delay: time.Hour})
	want := publishPriorities(t, h, pub, topic, batch)
	require.Equal(t, total, want[0], "the hour-delayed message sorts first by priority")
	want = want[1:]

	requireCounts(t, h, topic, backend.DefaultGroup, counts{Ready: total, Delayed: 1})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1})
	ch := subscribe(t, sub, topic)
	got := receiveIndexes(t, ch, total)
	prio := make([]int, len(batch))
	for i, m := range batch {
		prio[i] = m.priority
	}
	requireSameOrder(t, want, got, prio, "priority")
	requireCounts(t, h, topic, backend.DefaultGroup, counts{Delayed: 1})
}

// A subscriber works through a due backlog of low-priority messages one at a time (no
// prefetch): some were published due now, some delayed and due since. A high-priority
// message delayed a little longer becomes due meanwhile: the subscriber's next claim takes
// it, ahead of the whole backlog, and then a second high-priority one due after it; the
// backlog follows in due order.
func priorityOvertakesBacklog(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().Priorities {
		t.Skip("the backend declares no Capabilities.Priorities")
	}
	const backlog = 100 // due now, then as many due after lowDelay
	const lowDelay, highDelay = 50 * time.Millisecond, 300 * time.Millisecond
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	batch := make([]priorityMessage, 0, 2*backlog+2)
	for range backlog {
		batch = append(batch, priorityMessage{})
	}
	for range backlog {
		batch = append(batch, priorityMessage{delay: lowDelay})
	}
	high := len(batch) // the first high-priority message, due after the second
	batch = append(batch, priorityMessage{priority: 5, delay: highDelay + 10*time.Millisecond},
		priorityMessage{priority: 5, delay: highDelay})
	start := time.Now()
	want := publishPriorities(t, h, pub, topic, batch)
	require.Equal(t, []int{high + 1, high}, want[:2])

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1, Prefetch: -1})
	ch := subscribe(t, sub, topic)
	// The subscriber holds one message and claims the next only after its ack. That first one
	// is the oldest of the backlog, or on a slow machine already the high-priority one.
	first := receive(t, ch)
	firstAt, err := strconv.Atoi(string(first.Payload))
	require.NoError(t, err)
	require.Contains(t, []int{0, want[0]}, firstAt, "the first claim takes the oldest due message of the top priority due")
	requireCounts(t, h, topic, backend.DefaultGroup, counts{Ready: int64(len(batch) - 1), Pending: 1})
	require.True(t, first.Ack())

	got := []int{firstAt}
	for range len(batch) - 1 {
		msg := receive(t, ch)
		i, err := strconv.Atoi(string(msg.Payload))
		require.NoError(t, err)
		if i == high+1 {
			notEarly(t, time.Since(start), highDelay, "the high-priority message was delivered")
		}
		got = append(got, i)
		require.True(t, msg.Ack())
	}
	prio := make([]int, len(batch))
	for i, m := range batch {
		prio[i] = m.priority
	}
	want = append([]int{firstAt}, slices.DeleteFunc(want, func(i int) bool { return i == firstAt })...)
	requireSameOrder(t, want, got, prio, "priority")
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// A backend without Capabilities.Priorities accepts SetPriority and ignores it: one consumer
// gets messages of mixed priorities in publish order, where the backend declares FIFO.
func priorityIgnored(t *testing.T, h Harness) {
	caps := h.Backend.Capabilities()
	if caps.Priorities || !caps.FIFO {
		t.Skip("the backend declares Capabilities.Priorities, or no FIFO order to compare with")
	}
	const total = 30
	rng := rand.New(rand.NewPCG(orderSeed, 16))
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msgs := inOrder(h, newMessages(total)...)
	for _, msg := range msgs {
		pubsub.SetPriority(msg, rng.IntN(21)-10)
	}
	publish(t, pub, topic, msgs...)
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1})
	ch := subscribe(t, sub, topic)
	for i := range total {
		msg := receive(t, ch)
		require.Equal(t, strconv.Itoa(i), string(msg.Payload), "publish order, whatever the priorities")
		require.True(t, msg.Ack())
	}
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}
