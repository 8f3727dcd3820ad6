package partition_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/partition"
	"github.com/relq/relq/pubsub"
)

// backends builds each of relq's adapters on one Redis, under a prefix of their own.
func backends(t *testing.T) map[string]func() backend.Backend {
	client := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	must := func(b backend.Backend, err error) backend.Backend {
		require.NoError(t, err)
		return b
	}
	return map[string]func() backend.Backend{
		"list":    func() backend.Backend { return must(list.New(client, list.Options{Prefix: prefix + "l"})) },
		"zset":    func() backend.Backend { return must(zset.New(client, zset.Options{Prefix: prefix + "z"})) },
		"streams": func() backend.Backend { return must(streams.New(client, streams.Options{Prefix: prefix + "s"})) },
		"watermill": func() backend.Backend {
			return must(streams.New(client, streams.Options{Prefix: prefix + "w", Format: streams.FormatWatermill}))
		},
	}
}

// A topic created with partitions is served over them by a plain Publisher and Subscriber:
// every message arrives once, each key's in publish order, and the stored keys are the
// partitions', not the topic's.
func TestACreatedTopicIsServedOverItsPartitions(t *testing.T) {
	t.Parallel()
	for name, build := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			be := build()
			topic := "orders-" + name
			require.NoError(t, partition.Create(ctx, be, topic, 4))
			n, err := partition.Count(ctx, be, topic)
			require.NoError(t, err)
			require.Equal(t, 4, n)

			pub, err := pubsub.NewPublisher(be, pubsub.PublisherConfig{
				Key: func(_ string, m *message.Message) string { return m.Metadata.Get("customer") },
			}, nil)
			require.NoError(t, err)
			defer pub.Close()
			sub, err := pubsub.NewSubscriber(be, pubsub.SubscriberConfig{Group: "billing"}, nil)
			require.NoError(t, err)
			defer sub.Close()
			require.NoError(t, sub.SubscribeInitialize(topic))

			const customers, each = 8, 25
			for i := range each {
				for c := range customers {
					m := message.NewMessage(fmt.Sprintf("%d-%d", c, i), []byte(strconv.Itoa(i)))
					m.Metadata.Set("customer", "c"+strconv.Itoa(c))
					require.NoError(t, pub.Publish(topic, m))
				}
			}
			msgs, err := sub.Subscribe(ctx, topic)
			require.NoError(t, err)
			next := map[string]int{}
			for range customers * each {
				select {
				case m := <-msgs:
					k := pubsub.Key(m)
					require.Equal(t, strconv.Itoa(next[k]), string(m.Payload), "key %s out of order", k)
					next[k]++
					id := m.Metadata.Get(pubsub.MetadataDeliveryID)
					require.Regexp(t, `^[0-3]:`, id, "a delivery ID names its partition")
					m.Ack()
				case <-time.After(10 * time.Second):
					t.Fatalf("received %v, want %d of each of %d keys", next, each, customers)
				}
			}

			require.Eventually(t, func() bool { // acks go out in batches
				stats, err := partition.Open(be).Stats(ctx, &backend.StatsParams{Topic: topic, Group: "billing"})
				require.NoError(t, err)
				return stats.Counters.Acked == customers*each && stats.Pending == 0
			}, 10*time.Second, 20*time.Millisecond)
			raw, err := be.Stats(ctx, &backend.StatsParams{Topic: topic, Group: "billing"})
			if err == nil {
				require.Zero(t, raw.Counters.Published, "nothing was stored under the topic's own keys")
			}
			names, err := partition.Open(be).(backend.TopicLister).TopicNames(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{topic}, names, "the partitions are listed as their topic")
		})
	}
}

// A topic never created with partitions keeps its keys and delivery IDs exactly: Open and
// pubsub pass its calls to the backend as they are.
func TestATopicWithoutPartitionsIsTheBackendsOwn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	be := backends(t)["list"]()
	pub, err := pubsub.NewPublisher(be, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	defer pub.Close()
	sub, err := pubsub.NewSubscriber(be, pubsub.SubscriberConfig{Group: "g"}, nil)
	require.NoError(t, err)
	defer sub.Close()
	msgs, err := sub.Subscribe(ctx, "plain")
	require.NoError(t, err)
	m := message.NewMessage("m1", []byte("x"))
	pubsub.SetKey(m, "k")
	require.NoError(t, pub.Publish("plain", m))
	select {
	case got := <-msgs:
		require.NotContains(t, got.Metadata.Get(pubsub.MetadataDeliveryID), ":", "an unpartitioned topic's IDs are the backend's")
		got.Ack()
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered")
	}
	n, err := partition.Count(ctx, be, "plain")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	s, err := be.Stats(ctx, &backend.StatsParams{Topic: "plain", Group: "g"})
	require.NoError(t, err)
	require.Equal(t, int64(1), s.Counters.Published, "stored under the topic's own keys")
}

// Create refuses what would split a topic two ways, and writes nothing then.
func TestCreateRefusesAnotherCount(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	be := backends(t)["zset"]()
	require.NoError(t, partition.Create(ctx, be, "four", 4))
	require.NoError(t, partition.Create(ctx, be, "four", 4), "creating again with the same count")
	var ce *partition.CountError
	err := partition.Create(ctx, be, "four", 8)
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, partition.ErrCountMismatch)
	require.Equal(t, 4, ce.Recorded)

	// A topic in use without partitions stays as it is.
	pub, err := pubsub.NewPublisher(be, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	defer pub.Close()
	require.NoError(t, pub.Publish("busy", message.NewMessage("m", nil)))
	err = partition.Create(ctx, be, "busy", 4)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 1, ce.Recorded)
	n, err := partition.Count(ctx, be, "busy")
	require.NoError(t, err)
	require.Equal(t, 1, n)

	require.ErrorIs(t, partition.Create(ctx, be, "too-many", partition.Max+1), backend.ErrInvalidConfig)
	require.ErrorIs(t, partition.Create(ctx, be, "bad name", 4), backend.ErrInvalidName)
}

// A process that read a topic before it was created with partitions, and publishes to it
// after, publishes to its partitions: a first write reads the record again.
func TestAReaderBeforeCreationPublishesToThePartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	be := backends(t)["list"]()
	seen := partition.Open(be)
	_, err := seen.Stats(ctx, &backend.StatsParams{Topic: "late", Group: "g"})
	require.NoError(t, err, "read while the topic does not exist")
	require.NoError(t, partition.Create(ctx, be, "late", 3))
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := seen.Publish(ctx, &backend.PublishParams{Topic: "late", Messages: []backend.OutMessage{
				{Envelope: backend.Envelope{UUID: "m" + strconv.Itoa(i)}},
			}})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	topic, err := partition.Open(be).(backend.Admin).Topic(ctx, "late")
	require.NoError(t, err)
	require.Equal(t, int64(30), topic.Backlog, "every message kept for the first group")
	raw, err := be.(backend.Admin).Topic(ctx, "late")
	require.ErrorIs(t, err, backend.ErrTopicNotFound, "nothing under the topic's own keys: %+v", raw)
}

// Ordered on a topic without partitions: the whole topic is one partition, handled one message
// at a time in publish order, a retry before what follows it; delivery IDs stay the backend's.
func TestOrderedOnATopicWithoutPartitions(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"list", "zset", "streams"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			be := backends(t)[name]()
			pub, err := pubsub.NewPublisher(be, pubsub.PublisherConfig{}, nil)
			require.NoError(t, err)
			defer pub.Close()
			sub, err := pubsub.NewSubscriber(be, pubsub.SubscriberConfig{
				Group: "g", Ordered: true, Concurrency: 4, Block: 100 * time.Millisecond,
				NackBackoff: func(int) time.Duration { return 50 * time.Millisecond },
			}, nil)
			require.NoError(t, err)
			defer sub.Close()
			msgs, err := sub.Subscribe(t.Context(), "plain-ordered")
			require.NoError(t, err)
			for i := range 20 {
				require.NoError(t, pub.Publish("plain-ordered", message.NewMessage(fmt.Sprintf("m%d", i), []byte(strconv.Itoa(i)))))
			}
			var got []string
			for len(got) < 20 {
				select {
				case m := <-msgs:
					require.NotContains(t, pubsub.DeliveryID(m), ":", "the backend's own IDs")
					i, _ := strconv.Atoi(string(m.Payload))
					require.Equal(t, len(got), i, "message %d came when %d was next", i, len(got))
					if i%5 == 2 && pubsub.Attempt(m) == 1 {
						m.Nack() // comes back before the next, after its delay
						continue
					}
					got = append(got, string(m.Payload))
					m.Ack()
				case <-time.After(10 * time.Second):
					t.Fatalf("handled %v", got)
				}
			}
		})
	}
}
