package streams_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

func publishTo(t *testing.T, b backend.Backend, topic string) {
	t.Helper()
	_, err := b.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{
		{Envelope: backend.Envelope{UUID: "u", Payload: []byte("p")}}}})
	require.NoError(t, err)
}

func TestTopicsListsStreamsWithAGroupOrABacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	b, err := streams.New(c, streams.Options{Prefix: prefix})
	require.NoError(t, err)
	lb, err := list.New(c, list.Options{Prefix: prefix})
	require.NoError(t, err)

	topics, err := b.TopicNames(ctx)
	require.NoError(t, err)
	require.Empty(t, topics)

	publishTo(t, b, "orders")
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "audit:eu", Group: "g"}))
	publishTo(t, lb, "list-topic")
	// A stream without groups and without entries (its last group destroyed by hand) is no
	// topic; one with entries (written by hand) holds a backlog.
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "gone", Group: "g"}))
	require.NoError(t, c.XGroupDestroy(ctx, "{"+prefix+":gone}:stream", "g").Err())
	require.NoError(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "{" + prefix + ":bare}:stream", Values: []string{"e", "x"}}).Err())

	topics, err = b.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"audit:eu", "bare", "orders"}, topics)
	topics, err = lb.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"list-topic"}, topics)

	for topic, want := range map[string]bool{"orders": true, "gone": false, "bare": true, "list-topic": false} {
		got, err := b.HasTopic(ctx, topic)
		require.NoError(t, err)
		require.Equal(t, want, got, topic)
	}
}

// In FormatWatermill the stream is the bare topic name; Topics finds the topics by relq's
// publish counter of each, {topic}:prefix:published.
func TestTopicsInWatermillFormat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	b, err := streams.New(c, streams.Options{Prefix: prefix, Format: streams.FormatWatermill})
	require.NoError(t, err)
	other, err := streams.New(c, streams.Options{Prefix: prefix + "x", Format: streams.FormatWatermill})
	require.NoError(t, err)

	// Stream names are global in this format: make them unique to the test.
	t1, t2, t3 := prefix+"-orders", prefix+"-audit:eu", prefix+"-other"
	publishTo(t, b, t1)
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: t1, Group: "billing"}))
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: t2, Group: "g"}))
	publishTo(t, other, t3)

	topics, err := b.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{t2, t1}, topics)
	topics, err = other.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{t3}, topics)
}
