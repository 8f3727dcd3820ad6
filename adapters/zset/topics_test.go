package zset_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

// publishTo publishes one message to topic through b, due after delay.
func publishTo(t *testing.T, b backend.Backend, topic string, delay time.Duration) {
	t.Helper()
	_, err := b.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{
		{Envelope: backend.Envelope{UUID: "u", Payload: []byte("p")}, Delay: delay}}})
	require.NoError(t, err)
}

func TestTopicsListsZsetTopicsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	zb, err := zset.New(c, zset.Options{Prefix: prefix})
	require.NoError(t, err)
	lb, err := list.New(c, list.Options{Prefix: prefix})
	require.NoError(t, err)

	topics, err := zb.TopicNames(ctx)
	require.NoError(t, err)
	require.Empty(t, topics)

	publishTo(t, zb, "ready", 0)
	publishTo(t, zb, "delayed", time.Hour) // only delayed: the ready ZSET still shows it
	require.NoError(t, zb.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "no:messages", Group: "g"}))
	publishTo(t, lb, "list-ready", 0)
	publishTo(t, lb, "list-delayed", time.Hour)
	require.NoError(t, lb.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "list:empty", Group: "g"}))

	topics, err = zb.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"delayed", "no:messages", "ready"}, topics)
	topics, err = lb.TopicNames(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"list-delayed", "list-ready", "list:empty"}, topics)

	for topic, want := range map[string]bool{"ready": true, "delayed": true, "no:messages": true,
		"list-ready": false, "list-delayed": false, "list:empty": false, "nope": false} {
		got, err := zb.HasTopic(ctx, topic)
		require.NoError(t, err)
		require.Equal(t, want, got, topic)
	}
}
