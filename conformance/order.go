package conformance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testOrder(t *testing.T, f Factory) {
	run(t, f, "FIFOWithOneConsumer", Options{}, orderFIFO)
	run(t, f, "DueOrderWithOneConsumer", Options{}, orderDue)
	run(t, f, "PriorityFirst", Options{}, func(t *testing.T, h Harness) { orderPriority(t, h, 0) })
	run(t, f, "PriorityFirstWhenDue", Options{}, func(t *testing.T, h Harness) { orderPriority(t, h, 200*time.Millisecond) })
}

// With one subscriber handling one message at a time, messages arrive in publish order,
// across publish batches and prefetch batches.
func orderFIFO(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().FIFO {
		t.Skip("the backend declares no Capabilities.FIFO")
	}
	const total, batch = 200, 25
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msgs := inOrder(h, newMessages(total)...)
	// Half is waiting before the subscriber starts, half arrives while it consumes.
	for i := 0; i < total/2; i += batch {
		publish(t, pub, topic, msgs[i:i+batch]...)
	}
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1})
	ch := subscribe(t, sub, topic)
	for i := total / 2; i < total; i += batch {
		publish(t, pub, topic, msgs[i:i+batch]...)
	}

	got := make([]string, 0, total)
	for range total {
		msg := receive(t, ch)
		got = append(got, string(msg.Payload))
		require.True(t, msg.Ack())
	}
	want := make([]string, total)
	for i, m := range msgs {
		want[i] = string(m.Payload)
	}
	require.Equal(t, want, got, "payloads are the publish index")
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// orderSeed makes the random delays and priorities the same on every run, so a failure
// can be replayed.
const orderSeed = 20240611

// With one subscriber handling one message at a time (and prefetching), messages with random
// delays arrive in due-time order, and in publish order among equal due times.
//
// The due time is set from the Redis clock when the message is stored, which the test cannot
// read. All messages are therefore published in one batch: one Publish is one atomic store
// with one "now", so due-time order is exactly the order of (delay, position in the batch).
// Delays are drawn in whole milliseconds, the precision of the contract, so the draw holds
// both messages due 1 ms apart and a few hundred ties, including ties between delivery IDs
// of different lengths ("99" and "100"), which a backend that breaks ties by comparing IDs
// as strings gets wrong.
func orderDue(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().DueOrder {
		t.Skip("the backend declares no Capabilities.DueOrder")
	}
	const total, maxDelayMs = 1000, 2000
	rng := rand.New(rand.NewPCG(orderSeed, orderSeed))
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1})
	ch := subscribe(t, sub, topic)

	msgs := inOrder(h, newMessages(total)...) // payload: the position in the batch
	delays := make([]int, total)
	for i, msg := range msgs {
		delays[i] = rng.IntN(maxDelayMs + 1)
		pubsub.SetDelay(msg, time.Duration(delays[i])*time.Millisecond)
	}
	want := make([]int, total)
	for i := range want {
		want[i] = i
	}
	slices.SortStableFunc(want, func(a, b int) int { return delays[a] - delays[b] })
	ties := 0
	for i := 1; i < total; i++ {
		if delays[want[i]] == delays[want[i-1]] {
			ties++
		}
	}
	require.NotZero(t, ties, "the draw should hold messages due at the same time")

	start := time.Now()
	publish(t, pub, topic, msgs...)

	got := receiveIndexes(t, ch, total)
	t.Logf("%d messages with %d ties in due time, all received %v after publishing", total, ties, time.Since(start))
	early, tied := 0, 0 // deliveries before a message due earlier, or published earlier and due together
	for i := 1; i < len(got); i++ {
		switch a, b := got[i-1], got[i]; {
		case delays[b] < delays[a]:
			early++
		case delays[b] == delays[a] && b < a:
			tied++
		}
	}
	if early+tied > 0 {
		t.Logf("%d deliveries came right after a message due later, %d right after one due together but published later", early, tied)
	}
	requireSameOrder(t, want, got, delays, "delay ms")
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// requireSameOrder compares delivery orders of batch positions, reporting the first
// difference with the key (named keyName) each position was ordered by, instead of two long
// lists.
func requireSameOrder(t *testing.T, want, got, key []int, keyName string) {
	t.Helper()
	first, wrong := -1, 0
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			wrong++
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return
	}
	g := "nothing"
	if first < len(got) {
		g = fmt.Sprintf("message %d (%s %d)", got[first], keyName, key[got[first]])
	}
	require.FailNow(t, "delivered out of order",
		"%d of %d deliveries out of place; the first is delivery %d: got %s, want message %d (%s %d)",
		wrong, len(want), first, g, want[first], keyName, key[want[first]])
}

// Where a backend has priorities, messages due at the same time are delivered by priority,
// higher first (negative ones after the default 0), in publish order within a priority.
// They are published in one batch, so they share one due time: due now (delay zero, before
// the subscriber starts), or due later (delay, on an idle subscriber). With a delay, one more
// message has the highest priority but is due later still: priority orders messages that
// are due, it never makes a message early (as a score mixing due time and priority would).
func orderPriority(t *testing.T, h Harness, delay time.Duration) {
	if !h.Backend.Capabilities().Priorities {
		t.Skip("the backend declares no Capabilities.Priorities")
	}
	const total = 30
	// A small range around the default 0: a backend may bound its priorities (and document
	// the bounds); these are what any backend with priorities should keep apart.
	levels := []int{-2, -1, 0, 1, 2}
	rng := rand.New(rand.NewPCG(orderSeed, uint64(delay)))
	topic := topicName()
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	var ch <-chan *message.Message
	if delay > 0 {
		sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1})
		ch = subscribe(t, sub, topic)
	}

	msgs := inOrder(h, newMessages(total)...)
	prio := make([]int, total)
	for i, msg := range msgs {
		prio[i] = levels[rng.IntN(len(levels))]
		pubsub.SetPriority(msg, prio[i])
		if delay > 0 {
			pubsub.SetDelay(msg, delay)
		}
	}
	for _, l := range levels {
		require.GreaterOrEqual(t, slices.Index(prio, l), 0, "the draw should hold priority %d", l)
	}
	want := make([]int, total)
	for i := range want {
		want[i] = i
	}
	slices.SortStableFunc(want, func(a, b int) int { return prio[b] - prio[a] })
	lateDelay := delay + 300*time.Millisecond
	if delay > 0 {
		late := newMessage(strconv.Itoa(total))
		pubsub.SetPriority(late, levels[len(levels)-1])
		pubsub.SetDelay(late, lateDelay)
		msgs = append(msgs, late)
		prio = append(prio, levels[len(levels)-1])
		want = append(want, total)
	}
	start := time.Now()
	publish(t, pub, topic, msgs...)
	if delay == 0 {
		sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 1})
		ch = subscribe(t, sub, topic)
	}

	got := make([]int, 0, len(msgs))
	for range msgs {
		msg := receive(t, ch)
		i, err := strconv.Atoi(string(msg.Payload))
		require.NoError(t, err)
		if i == total {
			notEarly(t, time.Since(start), lateDelay, "the later message of the highest priority was delivered")
		}
		got = append(got, i)
		require.True(t, msg.Ack())
	}
	requireSameOrder(t, want, got, prio, "priority")
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}
