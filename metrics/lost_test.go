package metrics_test

// The series that report what Redis lost: groups registered again after their state vanished,
// and messages a topic's backlog dropped.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/metrics"
	"github.com/relq/relq/pubsub"
)

// forget deletes every key of topic, as FLUSHALL or another client's DEL would.
func forget(t *testing.T, c redis.UniversalClient, prefix, topic string) {
	t.Helper()
	ctx := context.Background()
	found, err := c.Keys(ctx, keys.Tag(prefix, topic)+"*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, found)
	require.NoError(t, c.Del(ctx, found...).Err())
}

// A group whose keys vanish under a running subscription is registered again by it: the
// collector counts it and says when, and says nothing of a time before it happened.
func TestCollectorReportsReregistrations(t *testing.T) {
	t.Parallel()
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			c, prefix := redistest.Shared(t).Client(t), redistest.Prefix(t)
			b, err := a.new(c, prefix)
			require.NoError(t, err)
			sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{}, watermill.NopLogger{})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, sub.Close()) })
			msgs, err := sub.Subscribe(context.Background(), "orders")
			require.NoError(t, err)
			go func() {
				for m := range msgs {
					m.Ack()
				}
			}()
			col, err := metrics.NewCollector(metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"orders"}})
			require.NoError(t, err)
			l := fmt.Sprintf(`{backend=%q,group="default",topic="orders"}`, a.name)
			count, at := "relq_reregistered_total"+l, "relq_reregistered_timestamp_seconds"+l

			require.Eventually(t, func() bool { return testutil.CollectAndCount(col, "relq_ready") == 1 }, 10*time.Second, 10*time.Millisecond,
				"the subscription registers its group")
			got := gather(t, col)
			require.Equal(t, 0.0, got[count])
			require.NotContains(t, got, at, "no time for a re-registration that never happened")

			forgotAt := time.Now()
			forget(t, c, prefix, "orders")
			publish(t, b, "orders", 1, 0)
			require.Eventually(t, func() bool { return gather(t, col)[count] == 1 }, 20*time.Second, 50*time.Millisecond,
				"the subscription registers the group again and the collector counts it")
			got = gather(t, col)
			require.Contains(t, got, at)
			when := time.UnixMilli(int64(got[at] * 1000))
			require.WithinRange(t, when, forgotAt.Add(-time.Second), time.Now().Add(time.Second))
		})
	}
}

// A topic with no group keeps at most BacklogLimit messages: the collector counts what its
// backlog dropped, before and after a group registers, whether topics are named or discovered.
func TestCollectorReportsBacklogDrops(t *testing.T) {
	t.Parallel()
	for _, a := range []struct {
		name string
		new  func(c redis.UniversalClient, prefix string) (backend.Backend, error)
	}{
		{"list", func(c redis.UniversalClient, p string) (backend.Backend, error) {
			return list.New(c, list.Options{Prefix: p, BacklogLimit: 3})
		}},
		{"zset", func(c redis.UniversalClient, p string) (backend.Backend, error) {
			return zset.New(c, zset.Options{Prefix: p, BacklogLimit: 3})
		}},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			b, err := a.new(redistest.Shared(t).Client(t), redistest.Prefix(t))
			require.NoError(t, err)
			publish(t, b, "signups", 5, 0)
			publish(t, b, "signups", 1, 0)
			named, err := metrics.NewCollector(metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"signups", "missing"}})
			require.NoError(t, err)
			discovering, err := metrics.NewCollector(metrics.CollectorConfig{Backends: []backend.Backend{b}})
			require.NoError(t, err)
			dropped := fmt.Sprintf(`relq_topic_backlog_dropped_total{backend=%q,topic="signups"}`, a.name)

			for _, col := range []*metrics.Collector{named, discovering} {
				got := gather(t, col)
				require.Equal(t, 3.0, got[dropped], "5 then 1 published into a backlog of 3: the 3 oldest dropped")
				require.Equal(t, 1, testutil.CollectAndCount(col, "relq_topic_backlog_dropped_total"), "no series for a missing topic")
				require.Zero(t, testutil.CollectAndCount(col, "relq_ready"), "no group yet")
			}

			subscribed(t, b, "signups")
			for _, col := range []*metrics.Collector{named, discovering} {
				got := gather(t, col)
				require.Equal(t, 3.0, got[dropped], "the drops stay counted once a group took the backlog")
				require.Equal(t, 3.0, got[fmt.Sprintf(`relq_ready{backend=%q,group="default",topic="signups"}`, a.name)])
			}
		})
	}
}
