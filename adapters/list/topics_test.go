package list_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

// publishTo publishes n messages to topic through b.
func publishTo(t *testing.T, b backend.Backend, topic string, n int) {
	t.Helper()
	msgs := make([]backend.OutMessage, n)
	for i := range msgs {
		msgs[i] = backend.OutMessage{Envelope: backend.Envelope{UUID: "u", Payload: []byte("p")}}
	}
	_, err := b.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: msgs})
	require.NoError(t, err)
}

func TestTopicsListsTopicsWithAGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	b, err := list.New(c, list.Options{Prefix: prefix})
	require.NoError(t, err)

	topics, err := b.TopicNames(ctx)
	require.NoError(t, err)
	require.Empty(t, topics)

	// A group registered without a publish, a publish without a group (its backlog), and a
	// topic name holding ':' all count.
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "billing"}))
	publishTo(t, b, "audit:eu", 2)
	topics, err = b.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"audit:eu", "orders"}, topics)

	for topic, want := range map[string]bool{"orders": true, "audit:eu": true, "audit": false, "nope": false} {
		got, err := b.HasTopic(ctx, topic)
		require.NoError(t, err)
		require.Equal(t, want, got, topic)
	}
	_, err = b.HasTopic(ctx, "bad*topic")
	require.ErrorIs(t, err, backend.ErrInvalidName)
}

// Keys that merely look like a registry are not topics: another prefix (one that starts with
// this one, too), a key of another type, and keys that the SCAN pattern's wildcard matches
// only by spanning more than a topic name.
func TestTopicsIgnoresLookalikeKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	b, err := list.New(c, list.Options{Prefix: prefix})
	require.NoError(t, err)
	other, err := list.New(c, list.Options{Prefix: prefix + "x"})
	require.NoError(t, err)
	publishTo(t, b, "orders", 1)
	publishTo(t, other, "elsewhere", 1)

	for _, key := range []string{
		"{" + prefix + ":orders}:g:default:wake:registry", // '*' would have to span "orders}:g:..."
		"{" + prefix + ":}:registry",                      // empty topic
		"{" + prefix + ":a b}:registry",                   // not a valid name
		"{" + prefix + ":x}:registry:registry",
		prefix + ":y:registry",
	} {
		require.NoError(t, c.HSet(ctx, key, "default", "0").Err())
	}
	require.NoError(t, c.Set(ctx, "{"+prefix+":str}:registry", "default", 0).Err())

	topics, err := b.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"orders"}, topics)
	topics, err = other.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"elsewhere"}, topics)
}

// Each backend finds its topics by what only it writes (list T:registry or its mark on a
// backlog in T:meta, zset T:zregistry or its mark, streams T:stream), so the list backend
// lists none of the others' topics, backlogs included.
func TestTopicsLeavesOutOtherBackendsTopics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	lb, err := list.New(c, list.Options{Prefix: prefix})
	require.NoError(t, err)
	zb, err := zset.New(c, zset.Options{Prefix: prefix})
	require.NoError(t, err)
	sb, err := streams.New(c, streams.Options{Prefix: prefix})
	require.NoError(t, err)

	publishTo(t, lb, "list-topic", 2)
	publishTo(t, zb, "zset-topic", 2)
	publishTo(t, sb, "streams-topic", 2)
	// A zset topic with a second group holding only a delayed message still shows a ZSET.
	require.NoError(t, zb.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "zset-delayed", Group: "g"}))
	_, err = zb.Publish(ctx, &backend.PublishParams{Topic: "zset-delayed", Messages: []backend.OutMessage{
		{Envelope: backend.Envelope{UUID: "u"}, Delay: time.Hour}}})
	require.NoError(t, err)

	got, err := lb.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"list-topic"}, got)
	got, err = zb.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"zset-delayed", "zset-topic"}, got)
	got, err = sb.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"streams-topic"}, got)

	for _, topic := range []string{"zset-topic", "zset-delayed", "streams-topic"} {
		ok, err := lb.HasTopic(ctx, topic)
		require.NoError(t, err)
		require.False(t, ok, topic)
	}
}

// The two backends name their registries apart, so a drained topic (nothing left but the
// registry, counters and a dead letter) is still listed by the backend that wrote it only.
func TestTopicsTellsADrainedListTopicFromAZsetOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	lb, err := list.New(c, list.Options{Prefix: prefix})
	require.NoError(t, err)
	zb, err := zset.New(c, zset.Options{Prefix: prefix})
	require.NoError(t, err)

	require.NoError(t, lb.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "drained", Group: backend.DefaultGroup}))
	publishTo(t, lb, "drained", 1)
	ds, err := lb.Claim(ctx, &backend.ClaimParams{Topic: "drained", Group: backend.DefaultGroup, Consumer: "c", Count: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	_, err = lb.Nack(ctx, &backend.NackParams{Topic: "drained", Group: backend.DefaultGroup, Consumer: "c",
		Items: []backend.NackItem{{ID: ds[0].ID, Attempt: ds[0].Attempt, DeadLetter: true, Reason: "test"}}})
	require.NoError(t, err)

	got, err := lb.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"drained"}, got)
	got, err = zb.TopicNames(ctx)
	require.NoError(t, err)
	require.Empty(t, got)
	st, err := lb.Stats(ctx, &backend.StatsParams{Topic: "drained", Group: backend.DefaultGroup})
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Dead)
	require.Equal(t, int64(1), st.Counters.Published)
}

// A Redis Cluster spreads topics over its primaries; Topics scans every one of them.
func TestTopicsOnRedisCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: -1})
	cc := cluster.Client(t)
	b, err := list.New(cc, list.Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	want := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"}
	for _, topic := range want {
		publishTo(t, b, topic, 1)
	}
	// The keys lie on more than one primary, or the test proves nothing.
	var holding atomic.Int32
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		size, err := n.DBSize(ctx).Result()
		if size > 0 {
			holding.Add(1)
		}
		return err
	}))
	require.Greater(t, holding.Load(), int32(1))
	got, err := b.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
