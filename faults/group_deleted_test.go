package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

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
			admin := b.(backend.Admin)
			pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, faultLogger)
			require.NoError(t, err)
			c := subscribeConsumer(t, newFaultSubscriber(t, b, pubsub.SubscriberConfig{}), topic)
			ctx := context.Background()
			require.NoError(t, pub.Publish(topic, faultMessages(10)...))
			require.True(t, pollUntil(settleTimeout, func() bool { return c.handled.distinct() == 10 }))

			require.NoError(t, admin.DeleteGroup(ctx, topic, backend.DefaultGroup))
			deletedAt := time.Now()
			require.True(t, pollUntil(settleTimeout, c.closedEarly), "the subscription did not stop on an operator's delete")
			stoppedIn := time.Since(deletedAt)
			claim := func() error {
				_, err := b.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: backend.DefaultGroup, Consumer: "late", Count: 1, Lease: time.Minute})
				return err
			}
			require.ErrorIs(t, claim(), backend.ErrGroupDeleted)
			require.NoError(t, pub.Publish(topic, faultMessages(5)...), "a publish after the delete goes to the topic's backlog")

			require.True(t, pollUntil(tombstone+settleTimeout, func() bool { return !errors.Is(claim(), backend.ErrGroupDeleted) }),
				"the tombstone outlived TombstoneTTL")
			ended := time.Since(deletedAt)
			require.GreaterOrEqual(t, ended, tombstone-time.Second, "the tombstone ended long before TombstoneTTL")
			require.ErrorIs(t, claim(), backend.ErrGroupLost)

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
				Scenario: "10 group deleted through the Admin API", Backend: bc.name, Published: 15, Handled: 15,
				Note: fmt.Sprintf("subscription stopped %v after the delete (ErrGroupDeleted); TombstoneTTL %v: tombstone ended after %v; the 5 published meanwhile waited in the backlog",
					stoppedIn.Round(time.Millisecond), tombstone, ended.Round(100*time.Millisecond)),
			})
		})
	}
}
