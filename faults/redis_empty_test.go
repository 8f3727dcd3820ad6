package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Redis comes back empty under running subscribers, and keeps no state of theirs: the group
// vanished, nobody deleted it. Redis without persistence restarted (SIGKILL, then a start with
// no AOF and no RDB), or another client ran FLUSHALL. The subscriptions must register their
// group again by themselves, on the same Subscribe channel, and every message whose Publish
// started after Redis last answered again must be delivered. What Redis held before is gone with
// it, and so is what an earlier event's publishes still held in Redis at a later one: those
// messages are counted apart, not as lost. The time from Redis answering to the
// first delivery of a message published after it is reported.
func TestRedisComesBackEmpty(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"restarted empty", "FLUSHALL"} {
		for _, bc := range faultBackends {
			t.Run(how+"/"+bc.name, func(t *testing.T) {
				t.Parallel()
				runRedisEmpty(t, bc, how)
			})
		}
	}
}

func runRedisEmpty(t *testing.T, bc backendCase, how string) {
	phase := time.Duration(scale(1, 5)) * time.Second // load between events
	events := scale(1, 3)

	server := redistest.Start(t, redistest.Options{})
	topic, b, c, p := startLoad(t, bc, server.Client(t), pubsub.SubscriberConfig{Concurrency: redisConsumers, Lease: redisLease})
	// A second group of the topic: what the first group registered again takes from the
	// backlog, this one must receive too.
	c2 := subscribeConsumer(t, newFaultSubscriber(t, b, pubsub.SubscriberConfig{Group: "audit", Concurrency: redisConsumers, Lease: redisLease}), topic)
	other := server.Client(t)
	var backAt []time.Time
	for range events {
		time.Sleep(phase)
		if how == "FLUSHALL" {
			require.NoError(t, other.FlushAll(context.Background()).Err())
		} else {
			require.NoError(t, server.Kill())
			require.NoError(t, server.Start()) // returns once the new, empty Redis answers
		}
		backAt = append(backAt, time.Now())
	}
	time.Sleep(phase)
	p.stop()
	require.False(t, c.closedEarly() || c2.closedEarly(), "a subscription channel closed: it took the vanished group for a deleted one")

	// Every message whose Publish started after Redis was back the last time: what was
	// published before a later event may have been wiped with it. Each group receives all.
	after := p.confirmedSentAfter(backAt[len(backAt)-1])
	ok := pollUntil(settleTimeout, func() bool { return len(c.handled.missing(after))+len(c2.handled.missing(after)) == 0 })
	missing, missing2 := c.handled.missing(after), c2.handled.missing(after)
	require.True(t, ok, "of %d messages published after Redis came back empty, %d never reached group %s (e.g. %v) and %d never reached group audit (e.g. %v)",
		len(after), len(missing), backend.DefaultGroup, firstFew(missing, 5), len(missing2), firstFew(missing2, 5))
	st := waitSettled(t, b, topic)
	require.Zero(t, st.Dead, "dead letters: %+v", st)
	require.GreaterOrEqual(t, st.Counters.Reregistered, int64(1), "Stats do not count the re-registration: %+v", st.Counters)
	st2 := waitSettledGroup(t, b, topic, "audit")
	require.Zero(t, st2.Dead, "dead letters of group audit: %+v", st2)
	require.GreaterOrEqual(t, st2.Counters.Reregistered, int64(1), "Stats do not count group audit's re-registration: %+v", st2.Counters)

	var firsts []time.Duration
	for _, at := range backAt {
		first, ok := c.firstHandledPublishedAfter(p, at)
		require.True(t, ok, "no message published after Redis came back at %v was delivered", at)
		firsts = append(firsts, first.Sub(at))
	}
	_, worst := medianMax(firsts)
	confirmed := p.confirmedUUIDs()
	gone := len(c.handled.missing(confirmed)) // published before an event, never delivered: gone with Redis's data
	t.Logf("%s/%s: %d published after Redis came back, all delivered to both groups; %d published before went with the data; first delivery %v after Redis answered; re-registered %d and %d times",
		how, bc.name, len(after), gone, roundAll(firsts), st.Counters.Reregistered, st2.Counters.Reregistered)
	record(row{
		Scenario: "9 redis " + how + " under subscribers", Backend: bc.name,
		// Counted per group: each message published after Redis came back is owed to both.
		Published: 2 * len(after), Handled: 2*len(after) - len(missing) - len(missing2),
		Duplicates: c.handled.duplicates() + c2.handled.duplicates(), Lost: len(missing) + len(missing2),
		Recovery: worst,
		Note: fmt.Sprintf("%d× emptied, 2 groups (counts are per group); first delivery %v after Redis answered; counted: published after it came back the last time; %d published before were gone with its data",
			events, roundAll(firsts), gone),
	})
}
