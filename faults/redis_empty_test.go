package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Redis comes back empty under running subscribers, and keeps no state of theirs: the group
// vanished, nobody deleted it. Redis without persistence restarted (SIGKILL, then a start with
// no AOF and no RDB), or another client ran FLUSHALL. The subscriptions must register their
// group again by themselves, on the same Subscribe channel, and every message whose Publish
// started after Redis answered again must be delivered. What Redis held before is gone with
// it: those messages are counted apart, not as lost. The time from Redis answering to the
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
	topic := faultTopic()
	b, _ := newFaultBackend(t, bc, server.Client(t), redistest.Prefix(t))
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, faultLogger)
	require.NoError(t, err)
	sub := newFaultSubscriber(t, b, pubsub.SubscriberConfig{Concurrency: redisConsumers, Lease: redisLease})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)

	c := newConsumer(msgs)
	defer c.stop(cancel)
	p := newProducer(pub, topic)
	defer p.stop()
	other := server.Client(t)

	require.True(t, pollUntil(settleTimeout, func() bool { return c.handled.distinct() >= 100 }),
		"messages do not flow before Redis is emptied")
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
	require.False(t, c.closedEarly(), "the subscription channel closed: it took the vanished group for a deleted one")

	// Every message whose Publish started after Redis was back (after the first event).
	after := p.confirmedSentAfter(backAt[0])
	ok := pollUntil(settleTimeout, func() bool { return len(c.handled.missing(after)) == 0 })
	missing := c.handled.missing(after)
	require.True(t, ok, "%d of %d messages published after Redis came back empty were never delivered, e.g. %v",
		len(missing), len(after), firstFew(missing, 5))
	st := waitSettled(t, b, topic)
	require.Zero(t, st.Dead, "dead letters: %+v", st)
	require.GreaterOrEqual(t, st.Counters.Reregistered, int64(1), "Stats do not count the re-registration: %+v", st.Counters)

	var firsts []time.Duration
	for _, at := range backAt {
		first, ok := c.firstHandledPublishedAfter(p, at)
		require.True(t, ok, "no message published after Redis came back at %v was delivered", at)
		firsts = append(firsts, first.Sub(at))
	}
	_, worst := medianMax(firsts)
	confirmed := p.confirmedUUIDs()
	gone := len(c.handled.missing(confirmed)) // published before an event, never delivered: gone with Redis's data
	t.Logf("%s/%s: %d published after Redis came back, all delivered; %d published before went with the data; first delivery %v after Redis answered; re-registered %d times",
		how, bc.name, len(after), gone, roundAll(firsts), st.Counters.Reregistered)
	record(row{
		Scenario: "redis " + how + " under subscribers", Backend: bc.name,
		Published: len(after), Handled: len(after) - len(missing), Duplicates: c.handled.duplicates(), Lost: len(missing),
		Recovery: worst,
		Note: fmt.Sprintf("%d× emptied; first delivery %v after Redis answered; counted: published after it came back; %d published before were gone with its data",
			events, roundAll(firsts), gone),
	})
}

// An operator deletes the group through the Admin API under a running subscription: the
// subscription stops (its channel closes, its claims fail with ErrGroupDeleted) instead of
// registering the group again, for TombstoneTTL; then the tombstone ends, the topic keeps no
// key, and a new subscription to the group consumes again.
func TestGroupDeletedThroughTheAdminAPI(t *testing.T) {
	t.Parallel()
	const tombstone = 2 * time.Second
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			server := redistest.Start(t, redistest.Options{})
			client := server.Client(t)
			topic := faultTopic()
			b, _ := newConformanceBackend(t, bc, client, redistest.Prefix(t), conformance.Options{TombstoneTTL: tombstone})
			admin := b.(pubsub.Admin)
			pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, faultLogger)
			require.NoError(t, err)
			sub := newFaultSubscriber(t, b, pubsub.SubscriberConfig{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			msgs, err := sub.Subscribe(ctx, topic)
			require.NoError(t, err)
			c := newConsumer(msgs)
			defer c.stop(cancel)
			require.NoError(t, pub.Publish(topic, faultMessages(10)...))
			require.True(t, pollUntil(settleTimeout, func() bool { return c.handled.distinct() == 10 }))

			require.NoError(t, admin.DeleteGroup(ctx, topic, pubsub.DefaultGroup))
			deletedAt := time.Now()
			require.True(t, pollUntil(settleTimeout, c.closedEarly), "the subscription did not stop on an operator's delete")
			stoppedIn := time.Since(deletedAt)
			claim := func() error {
				_, err := b.Claim(ctx, &pubsub.ClaimParams{Topic: topic, Group: pubsub.DefaultGroup, Consumer: "late", Count: 1, Lease: time.Minute})
				return err
			}
			require.ErrorIs(t, claim(), pubsub.ErrGroupDeleted)
			require.NoError(t, pub.Publish(topic, faultMessages(5)...), "a publish after the delete goes to the topic's backlog")

			require.True(t, pollUntil(tombstone+settleTimeout, func() bool { return !errors.Is(claim(), pubsub.ErrGroupDeleted) }),
				"the tombstone outlived TombstoneTTL")
			ended := time.Since(deletedAt)
			require.GreaterOrEqual(t, ended, tombstone-time.Second, "the tombstone ended long before TombstoneTTL")
			require.ErrorIs(t, claim(), pubsub.ErrGroupLost)

			again := newFaultSubscriber(t, b, pubsub.SubscriberConfig{})
			ch, err := again.Subscribe(ctx, topic)
			require.NoError(t, err)
			for range 5 {
				select {
				case m := <-ch:
					m.Ack()
				case <-time.After(settleTimeout):
					t.Fatal("a new subscription did not take the backlog after the tombstone ended")
				}
			}
			t.Logf("%s: subscription stopped %v after the delete; tombstone ended after %v", bc.name, stoppedIn.Round(time.Millisecond), ended.Round(time.Millisecond))
			record(row{
				Scenario: "group deleted through the Admin API", Backend: bc.name, Published: 15, Handled: 15,
				Note: fmt.Sprintf("subscription stopped %v after the delete (ErrGroupDeleted); TombstoneTTL %v: tombstone ended after %v; the 5 published meanwhile waited in the backlog",
					stoppedIn.Round(time.Millisecond), tombstone, ended.Round(100*time.Millisecond)),
			})
		})
	}
}
