package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testLoadBalance(t *testing.T, f Factory) {
	run(t, f, "ManySubscribersShareAGroup", Options{}, loadBalanceMany)
}

// Four subscribers with four handlers each share one group: every message is handled once,
// every subscriber does some of the work, and nothing is left behind. On a Partitioned backend
// a subscription gets its share of the partitions once the others gave theirs up, so messages
// are published until every subscriber handled some.
func loadBalanceMany(t *testing.T, h Harness) {
	const subscribers, concurrency, batch = 4, 4, 50
	total := 500
	topic := topicName()
	r := &recorder{}
	for i := range subscribers {
		// A lease far longer than any handler here: a duplicate would be a bug, not a
		// lease that expired on a loaded machine.
		sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: concurrency, Lease: 10 * time.Second})
		consume(subscribe(t, sub, topic), r, i, concurrency, nil)
	}

	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	msgs := newMessages(total)
	for i := 0; i < total; i += batch {
		publish(t, pub, topic, msgs[i:i+batch]...)
	}
	if h.Backend.Capabilities().Partitioned {
		for deadline := time.Now().Add(waitTimeout); !everySubscriberHandled(r, subscribers) && time.Now().Before(deadline); {
			more := newMessages(batch)
			publish(t, pub, topic, more...)
			msgs, total = append(msgs, more...), total+batch
			time.Sleep(10 * time.Millisecond)
		}
	}

	r.waitAll(t, uuids(msgs))
	s := requireSettled(t, h, topic, backend.DefaultGroup, 0)
	require.Equal(t, backend.Counters{Published: int64(total), Claimed: int64(total), Acked: int64(total)}, s.Counters)

	for id, n := range r.perUUID() {
		require.Equal(t, 1, n, "message %s handled %d times", id, n)
	}
	perSub := make([]int, subscribers)
	for _, s := range r.list() {
		perSub[s.Sub]++
	}
	for i, n := range perSub {
		require.Positive(t, n, "subscriber %d handled nothing: the group did not share the work (per subscriber: %v)", i, perSub)
	}
}

// everySubscriberHandled reports whether each of n subscribers handled a message.
func everySubscriberHandled(r *recorder, n int) bool {
	seen := map[int]bool{}
	for _, s := range r.list() {
		seen[s.Sub] = true
	}
	return len(seen) == n
}
