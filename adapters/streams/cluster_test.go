package streams_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// On Redis Cluster every script and the blocking XREAD touch one slot, in both formats: in
// the Watermill format the stream is the bare topic and relq's keys are tagged {topic}, which
// hashes to the same slot (a cross-slot script would fail with CROSSSLOT). Topics spread over
// the primaries; each one goes through a delayed publish, a nack, a dead letter and its
// requeue, delete-on-ack, stats and consumer cleanup.
func TestWorksOnRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: -1})
	client := cluster.Client(t)
	ctx := context.Background()
	for _, format := range []streams.Format{streams.FormatNative, streams.FormatWatermill} {
		prefix := redistest.Prefix(t)
		be, err := streams.New(client, streams.Options{Prefix: prefix, Format: format, Retention: streams.DeleteOnAck})
		require.NoError(t, err)
		pub, err := pubsub.NewPublisher(be, pubsub.PublisherConfig{}, nil)
		require.NoError(t, err)
		sub, err := pubsub.NewSubscriber(be, pubsub.SubscriberConfig{
			Block: 200 * time.Millisecond, MaxDeliveries: 2, NackBackoff: func(int) time.Duration { return 50 * time.Millisecond },
		}, nil)
		require.NoError(t, err)

		for i := range 6 {
			topic := prefix + "-topic-" + strconv.Itoa(i)
			ch, err := sub.Subscribe(ctx, topic)
			require.NoError(t, err)
			now, later, poison := newMsg("now"), newMsg("later"), newMsg("poison")
			pubsub.SetDelay(later, 100*time.Millisecond)
			require.NoError(t, pub.Publish(topic, now, later, poison))

			got := map[string]int{}
			for range 5 { // "now" is nacked once, "poison" twice and dead-lettered
				select {
				case msg := <-ch:
					p := string(msg.Payload)
					got[p]++
					if p == "poison" || p == "now" && pubsub.Attempt(msg) == 1 {
						msg.Nack()
					} else {
						msg.Ack()
					}
				case <-time.After(10 * time.Second):
					require.FailNow(t, "not delivered", "%s topic %s: got %v", format, topic, got)
				}
			}
			require.Equal(t, map[string]int{"now": 2, "later": 1, "poison": 2}, got, "%s topic %s", format, topic)

			var s backend.Stats
			require.Eventually(t, func() bool {
				s, err = be.Stats(ctx, &backend.StatsParams{Topic: topic, Group: backend.DefaultGroup})
				require.NoError(t, err)
				return s.Dead == 1 && s.Ready+s.Pending+s.Delayed == 0
			}, 10*time.Second, 10*time.Millisecond, "%+v", s)
			n, err := be.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: backend.DefaultGroup, All: true})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			select {
			case msg := <-ch:
				require.Equal(t, "poison", string(msg.Payload))
				require.Equal(t, 1, pubsub.Attempt(msg))
				msg.Ack()
			case <-time.After(10 * time.Second):
				require.FailNow(t, "requeued message not delivered", "%s topic %s", format, topic)
			}
			stream := topic
			if format == streams.FormatNative {
				stream = "{" + prefix + ":" + topic + "}:stream"
			}
			require.Eventually(t, func() bool { return client.XLen(ctx, stream).Val() == 0 }, 10*time.Second, 10*time.Millisecond,
				"delete-on-ack left entries in %s", stream)
		}
		require.NoError(t, sub.Close())

		// Listing and deleting topics: every key of each goes, but the tombstones of its groups,
		// which expire.
		listed, err := be.ListTopics(ctx)
		require.NoError(t, err)
		require.Len(t, listed, 6)
		for i := range 6 {
			topic := prefix + "-topic-" + strconv.Itoa(i)
			tag := "{" + prefix + ":" + topic + "}"
			if format == streams.FormatWatermill {
				tag = "{" + topic + "}"
			}
			require.NotEmpty(t, clusterKeys(t, client, tag+"*"))
			require.NoError(t, be.DeleteTopic(ctx, topic))
			left := clusterKeys(t, client, tag+"*")
			require.Len(t, left, 1, "%s topic %s: only its tombstones are left", format, topic)
			require.True(t, strings.HasSuffix(left[0], ":"+adaptertest.Tombstones), left[0])
			require.Positive(t, client.PTTL(ctx, left[0]).Val(), "the tombstones expire")
			require.Zero(t, client.Exists(ctx, topic).Val())
		}
	}
}

// clusterKeys lists the keys matching pattern on every primary.
func clusterKeys(t *testing.T, client *redis.ClusterClient, pattern string) []string {
	t.Helper()
	var mu sync.Mutex
	var all []string
	require.NoError(t, client.ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, pattern).Result()
		mu.Lock()
		defer mu.Unlock()
		all = append(all, keys...)
		return err
	}))
	return all
}

func newMsg(payload string) *message.Message {
	return message.NewMessage(watermill.NewUUID(), []byte(payload))
}
