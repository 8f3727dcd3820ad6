package list

import (
	"testing"

	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestPublishClaimAckLeavesOnlyCountersAndRegistry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("orders", pubsub.DefaultGroup)

	require.Equal(t, []string{"1", "2", "3"}, e.publish("orders", "a", "b", "c"))
	require.Equal(t, []string{"3", "2", "1"}, e.lrange(k.ready), "published at the left")
	require.Equal(t, []string{"1", "2", "3"}, e.zmembers(k.readyAt))
	require.Len(t, e.hash(k.topic.bodies), 3)
	require.Equal(t, map[string]string{"1": "1", "2": "1", "3": "1"}, e.hash(k.topic.refs))
	groups, err := e.b.Groups(e.ctx, "orders")
	require.NoError(t, err)
	require.Equal(t, []string{pubsub.DefaultGroup}, groups, "publishing to a topic without groups registers default")

	first := e.claim("orders", pubsub.DefaultGroup, "c1", 2)
	require.Equal(t, []string{"1", "2"}, ids(first))
	require.Equal(t, []string{"a", "b"}, payloads(first))
	require.Equal(t, envelope("a"), first[0].Envelope)
	require.Equal(t, 1, first[0].Attempt)
	require.Equal(t, []string{"3"}, e.lrange(k.ready))
	require.Equal(t, []string{"2", "1"}, e.lrange(k.processing))
	require.Equal(t, []string{"1", "2"}, e.zmembers(k.leases))
	require.Equal(t, []string{"1", "2"}, e.zmembers(k.pendingAt))
	require.Equal(t, map[string]string{"1": "c1", "2": "c1"}, e.hash(k.holders))
	require.Equal(t, map[string]string{"1": "1", "2": "1"}, e.hash(k.attempts))
	require.Equal(t, []string{"3"}, e.zmembers(k.readyAt))

	rest := e.claim("orders", pubsub.DefaultGroup, "c1", 5)
	require.Equal(t, []string{"3"}, ids(rest))

	require.Equal(t, pubsub.AckResult{Acked: 3}, e.ack("orders", pubsub.DefaultGroup, "c1", append(first, rest...)...))
	require.Equal(t, []string{"g:default:counters", "groups", "seq"}, e.keys("orders"))
	c := e.stats("orders", pubsub.DefaultGroup).Counters
	require.Equal(t, pubsub.Counters{Published: 3, Claimed: 3, Acked: 3}, c)

	require.Equal(t, pubsub.AckResult{Stale: 3}, e.ack("orders", pubsub.DefaultGroup, "c1", append(first, rest...)...),
		"a repeated ack is a no-op, counted stale")
	require.Equal(t, []string{"4", "5"}, e.publish("orders", "d", "e"), "IDs are never reused")
}

func TestFanOutStoresBodyOnceAndDeletesItAfterTheLastAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ensureGroup("t", "a")
	e.ensureGroup("t", "b")
	id := e.publish("t", "x")[0]

	require.Len(t, e.hash(e.gk("t", "a").topic.bodies), 1)
	require.Equal(t, map[string]string{id: "2"}, e.hash(e.gk("t", "a").topic.refs))
	require.Equal(t, []string{id}, e.lrange(e.gk("t", "a").ready))
	require.Equal(t, []string{id}, e.lrange(e.gk("t", "b").ready))
	require.False(t, e.exists(e.gk("t", pubsub.DefaultGroup).ready), "default is not registered")

	da := e.claim("t", "a", "c", 1)
	require.Equal(t, pubsub.AckResult{Acked: 1}, e.ack("t", "a", "c", da...))
	require.Equal(t, map[string]string{id: "1"}, e.hash(e.gk("t", "a").topic.refs))
	require.Len(t, e.hash(e.gk("t", "a").topic.bodies), 1, "b still holds the body")

	db := e.claim("t", "b", "c", 1)
	require.Equal(t, []string{"x"}, payloads(db))
	require.Equal(t, pubsub.AckResult{Acked: 1}, e.ack("t", "b", "c", db...))
	require.Equal(t, []string{"g:a:counters", "g:b:counters", "groups", "seq"}, e.keys("t"))
}

func TestNewGroupGetsOnlyLaterMessagesEvenWithAStaleGroupCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.publish("t", "before")
	// Another process registers a group: this backend's cached registry ({default}) is stale.
	other, err := New(e.c, Options{Prefix: e.prefix})
	require.NoError(t, err)
	require.NoError(t, other.EnsureGroup(e.ctx, &pubsub.EnsureGroupParams{Topic: "t", Group: "late", FromOldest: true}))
	second := e.publish("t", "after")

	require.Equal(t, []string{"after"}, payloads(e.claim("t", "late", "c", 10)))
	require.Equal(t, []string{"before", "after"}, payloads(e.claim("t", pubsub.DefaultGroup, "c", 10)))
	require.Equal(t, map[string]string{first[0]: "1", second[0]: "2"}, e.hash(e.gk("t", "late").topic.refs))
	groups, err := e.b.Groups(e.ctx, "t")
	require.NoError(t, err)
	require.Equal(t, []string{pubsub.DefaultGroup, "late"}, groups)
}

func TestPublishEmptyBatchWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids, err := e.b.Publish(e.ctx, &pubsub.PublishParams{Topic: "t"})
	require.NoError(t, err)
	require.Empty(t, ids)
	require.Empty(t, e.keys("t"))
}
