package list

import (
	"testing"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func TestPublishClaimAckLeavesOnlyCountersAndRegistry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("orders", backend.DefaultGroup)
	e.EnsureGroup("orders", backend.DefaultGroup)

	ids := e.Publish("orders", "a", "b", "c")
	require.Equal(t, adaptertest.IDsFrom(t, ids[0], 3), ids, "one ID after the other")
	require.Equal(t, []string{ids[2], ids[1], ids[0]}, e.readyIDs(k.ready), "published at the left")
	since := e.readySince(k.ready)
	require.Equal(t, since[ids[0]], since[ids[2]], "one batch, one ready-since time")
	require.Len(t, e.Hash(k.topic.bodies), 3)
	require.False(t, e.Exists(k.topic.refs), "one group: no reference counts")
	groups, err := e.b.GroupNames(e.Ctx, "orders")
	require.NoError(t, err)
	require.Equal(t, []string{backend.DefaultGroup}, groups)

	first := e.Claim("orders", backend.DefaultGroup, "c1", 2)
	require.Equal(t, ids[:2], adaptertest.IDs(first))
	require.Equal(t, []string{"a", "b"}, adaptertest.Payloads(first))
	require.Equal(t, adaptertest.Envelope("a"), first[0].Envelope)
	require.Equal(t, 1, first[0].Attempt)
	require.Equal(t, ids[2:], e.readyIDs(k.ready))
	require.False(t, e.Exists(k.processing), "a claim without blocking goes straight to pending")
	require.Equal(t, ids[:2], e.ZMembers(k.pending))
	require.Equal(t, ids[:2], e.ZMembers(k.pendingAt))
	require.Equal(t, map[string]string{ids[0]: "c1", ids[1]: "c1"}, e.holders(k))
	require.Equal(t, map[string]int{ids[0]: 1, ids[1]: 1}, e.attempts(k))
	require.False(t, e.Exists(k.retries), "first deliveries need no retries record")

	rest := e.Claim("orders", backend.DefaultGroup, "c1", 5)
	require.Equal(t, ids[2:], adaptertest.IDs(rest))

	require.Equal(t, backend.AckResult{Acked: 3}, e.Ack("orders", backend.DefaultGroup, "c1", append(first, rest...)...))
	require.Equal(t, []string{"g:default:counters", "meta", "registry"}, e.Keys("orders"))
	c := e.Stats("orders", backend.DefaultGroup).Counters
	require.Equal(t, backend.Counters{Published: 3, Claimed: 3, Acked: 3}, c)

	require.Equal(t, backend.AckResult{Stale: 3}, e.Ack("orders", backend.DefaultGroup, "c1", append(first, rest...)...),
		"a repeated ack is a no-op, counted stale")
	require.Equal(t, adaptertest.IDsFrom(t, adaptertest.IDAfter(t, ids[2], 1), 2), e.Publish("orders", "d", "e"), "IDs are never reused")
}

func TestFanOutStoresBodyOnceAndDeletesItAfterTheLastAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "a")
	e.EnsureGroup("t", "b")
	id := e.Publish("t", "x")[0]

	require.Len(t, e.Hash(e.gk("t", "a").topic.bodies), 1)
	require.Equal(t, map[string]string{id: "2"}, e.Hash(e.gk("t", "a").topic.refs))
	require.Equal(t, []string{id}, e.readyIDs(e.gk("t", "a").ready))
	require.Equal(t, []string{id}, e.readyIDs(e.gk("t", "b").ready))
	require.False(t, e.Exists(e.gk("t", backend.DefaultGroup).ready), "default is not registered")

	da := e.Claim("t", "a", "c", 1)
	require.Equal(t, backend.AckResult{Acked: 1}, e.Ack("t", "a", "c", da...))
	require.Equal(t, map[string]string{id: "1"}, e.Hash(e.gk("t", "a").topic.refs))
	require.Len(t, e.Hash(e.gk("t", "a").topic.bodies), 1, "b still holds the body")

	db := e.Claim("t", "b", "c", 1)
	require.Equal(t, []string{"x"}, adaptertest.Payloads(db))
	require.Equal(t, backend.AckResult{Acked: 1}, e.Ack("t", "b", "c", db...))
	require.Equal(t, []string{"g:a:counters", "g:b:counters", "meta", "registry"}, e.Keys("t"))
}

func TestNewGroupGetsOnlyLaterMessagesEvenWithAStaleGroupCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "early")
	first := e.Publish("t", "before")
	// Another process registers a group: this backend's cached registry ({early}) is stale.
	other, err := New(e.C, Options{Prefix: e.Prefix})
	require.NoError(t, err)
	require.NoError(t, other.EnsureGroup(e.Ctx, &backend.EnsureGroupParams{Topic: "t", Group: "late", FromOldest: true}))
	second := e.Publish("t", "after")

	require.Equal(t, []string{"after"}, adaptertest.Payloads(e.Claim("t", "late", "c", 10)))
	require.Equal(t, []string{"before", "after"}, adaptertest.Payloads(e.Claim("t", "early", "c", 10)))
	require.Equal(t, map[string]string{second[0]: "2"}, e.Hash(e.gk("t", "late").topic.refs),
		"only the message held by two groups has a count; one holder needs none")
	require.Len(t, first, 1)
	groups, err := e.b.GroupNames(e.Ctx, "t")
	require.NoError(t, err)
	require.Equal(t, []string{"early", "late"}, groups)
}

func TestPublishEmptyBatchWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t"})
	ids := res.IDs
	require.NoError(t, err)
	require.Empty(t, ids)
	require.Empty(t, e.Keys("t"))
}
