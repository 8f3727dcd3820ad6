package faults

import (
	"context"
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// A topic nobody subscribes to yet fills its backlog past BacklogLimit. Under the default
// policy the oldest are dropped: counted in TopicInfo, logged once at warning level by the
// Publisher, and the first group gets the newest BacklogLimit. Under BacklogRefuse the
// Publisher's Publish fails with a *BacklogFullError for what the backlog cannot hold, and the
// first group gets exactly what was accepted.
func TestBacklogPastItsLimit(t *testing.T) {
	t.Parallel()
	const limit, published = 100, 150
	for _, policy := range []backend.BacklogPolicy{backend.BacklogDropOldest, backend.BacklogRefuse} {
		for _, bc := range faultBackends {
			t.Run(string(policy)+"/"+bc.name, func(t *testing.T) {
				t.Parallel()
				server := redistest.Shared(t)
				topic := faultTopic()
				b, _ := newConformanceBackend(t, bc, server.Client(t), redistest.Prefix(t),
					conformance.Options{BacklogLimit: limit, BacklogFull: policy})
				logger := watermill.NewCaptureLogger()
				pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, logger)
				require.NoError(t, err)
				var accepted []string
				refused := 0
				for _, m := range faultMessages(published) {
					err := pub.Publish(topic, m)
					if err == nil {
						accepted = append(accepted, m.UUID)
						continue
					}
					var full *backend.BacklogFullError
					require.ErrorAs(t, err, &full)
					require.ErrorIs(t, err, backend.ErrBacklogFull)
					refused++
				}
				info, err := b.(backend.Admin).Topic(context.Background(), topic)
				require.NoError(t, err)
				require.Equal(t, int64(limit), info.Backlog)
				warnings := 0
				for _, m := range logger.Captured()[watermill.ErrorLogLevel] {
					if m.Fields["level"] == "warning" && m.Fields["topic"] == topic {
						warnings++
					}
				}
				want := accepted
				if policy == backend.BacklogRefuse {
					require.Equal(t, published-limit, refused, "publishes refused")
					require.Zero(t, info.BacklogDropped)
					require.Zero(t, warnings, "a refusing backlog logs no drop")
				} else {
					require.Zero(t, refused)
					require.Equal(t, int64(published-limit), info.BacklogDropped, "TopicInfo counts every drop")
					require.Equal(t, 1, warnings, "the drops are logged once in the minute")
					want = accepted[published-limit:]
				}

				c := subscribeConsumer(t, newFaultSubscriber(t, b, pubsub.SubscriberConfig{}), topic)
				require.True(t, pollUntil(settleTimeout, func() bool { return len(c.handled.missing(want)) == 0 }),
					"the first group did not get the backlog")
				require.Equal(t, len(want), c.handled.distinct(), "the first group got messages the backlog dropped or refused")
				record(row{
					Scenario: "11 backlog past its limit, " + string(policy), Backend: bc.name,
					Published: len(accepted), Handled: c.handled.distinct(), Duplicates: c.handled.duplicates(),
					Note: fmt.Sprintf("%d publishes to a topic with no group, BacklogLimit %d: %d dropped (TopicInfo.BacklogDropped, %d warning line), %d refused with *BacklogFullError; the first group got the %d kept",
						published, limit, info.BacklogDropped, warnings, refused, len(want)),
				})
			})
		}
	}
}
