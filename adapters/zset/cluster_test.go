package zset_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// On Redis Cluster every script, and the blocking claim's BLPOP on two wake-up lists, touches
// one slot: topics spread over the primaries all deliver, immediate, delayed and nacked
// messages alike (a cross-slot command would fail with CROSSSLOT).
func TestWorksOnRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: -1})
	backend, err := zset.New(cluster.Client(t), zset.Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	pub, err := pubsub.NewPublisher(backend, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	sub, err := pubsub.NewSubscriber(backend, pubsub.SubscriberConfig{
		Block: 200 * time.Millisecond, NackBackoff: func(int) time.Duration { return 50 * time.Millisecond },
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sub.Close()) })

	const topics = 6
	for i := range topics {
		topic := "topic-" + strconv.Itoa(i)
		ch, err := sub.Subscribe(context.Background(), topic)
		require.NoError(t, err)
		now, later := message.NewMessage(watermill.NewUUID(), []byte("now")), message.NewMessage(watermill.NewUUID(), []byte("later"))
		pubsub.SetDelay(later, 100*time.Millisecond)
		pubsub.SetPriority(now, 3)
		require.NoError(t, pub.Publish(topic, now, later))

		got := map[string]int{}
		for range 3 { // "now" is nacked once
			select {
			case msg := <-ch:
				got[string(msg.Payload)]++
				if string(msg.Payload) == "now" && pubsub.Attempt(msg) == 1 {
					msg.Nack()
				} else {
					msg.Ack()
				}
			case <-time.After(10 * time.Second):
				require.FailNow(t, "not delivered", "topic %s: got %v", topic, got)
			}
		}
		require.Equal(t, map[string]int{"now": 2, "later": 1}, got, "topic %s", topic)
	}
}
