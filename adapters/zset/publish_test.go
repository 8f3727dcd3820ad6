package zset

import (
	"strconv"
	"testing"
	"time"

	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestPublishClaimAckLeavesOnlyCountersAndRegistry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("orders", pubsub.DefaultGroup)

	before := e.redisNow()
	require.Equal(t, []string{"1", "2", "3"}, e.publish("orders", "a", "b", "c"))
	after := e.redisNow()
	ready := e.zrange(k.ready)
	require.Equal(t, mems("1", "2", "3"), members(ready))
	require.Equal(t, "0999999:0000000000000001", ready[0].Member, "rank of priority 0, then the padded ID")
	score := ready[0].Score
	for _, z := range ready {
		require.Equal(t, score, z.Score, "one due time, Redis now, for the whole batch")
	}
	require.GreaterOrEqual(t, score, before)
	require.LessOrEqual(t, score, after)
	require.Len(t, e.hash(k.topic.bodies), 3)
	require.Equal(t, map[string]string{"1": "1", "2": "1", "3": "1"}, e.hash(k.topic.refs))
	require.False(t, e.exists(k.topic.priorities), "priority 0 is not stored")
	require.Equal(t, []string{"1"}, e.lrange(k.wake), "one wake-up token")
	groups, err := e.b.Groups(e.ctx, "orders")
	require.NoError(t, err)
	require.Equal(t, []string{pubsub.DefaultGroup}, groups, "publishing to a topic without groups registers default")

	first := e.claim("orders", pubsub.DefaultGroup, "c1", 2)
	require.Equal(t, []string{"1", "2"}, ids(first))
	require.Equal(t, []string{"a", "b"}, payloads(first))
	require.Equal(t, envelope("a"), first[0].Envelope)
	require.Equal(t, 1, first[0].Attempt)
	require.Equal(t, mems("3"), e.zmembers(k.ready))
	require.Equal(t, []string{"1", "2"}, e.zmembers(k.leases))
	require.Equal(t, []string{"1", "2"}, e.zmembers(k.pendingAt))
	require.Equal(t, map[string]string{"1": "c1", "2": "c1"}, e.hash(k.holders))
	require.Equal(t, map[string]string{"1": "1", "2": "1"}, e.hash(k.attempts))
	due := strconv.FormatInt(int64(score), 10)
	require.Equal(t, map[string]string{"1": due, "2": due}, e.hash(k.dueAt), "the due time each had")
	require.Equal(t, []string{"1"}, e.lrange(k.wake), "more was due: the token is left for the next consumer")

	rest := e.claim("orders", pubsub.DefaultGroup, "c1", 5)
	require.Equal(t, []string{"3"}, ids(rest))

	require.Equal(t, pubsub.AckResult{Acked: 3}, e.ack("orders", pubsub.DefaultGroup, "c1", append(first, rest...)...))
	require.Equal(t, []string{"g:default:counters", "g:default:wake", "groups", "seq"}, e.keys("orders"))
	ttl, err := e.c.PTTL(e.ctx, k.wake).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0), "the unclaimed token expires")
	require.LessOrEqual(t, ttl, wakeTTL)
	c := e.stats("orders", pubsub.DefaultGroup).Counters
	require.Equal(t, pubsub.Counters{Published: 3, Claimed: 3, Acked: 3}, c)

	require.Equal(t, pubsub.AckResult{Stale: 3}, e.ack("orders", pubsub.DefaultGroup, "c1", append(first, rest...)...),
		"a repeated ack is a no-op, counted stale")
	require.Equal(t, []string{"4", "5"}, e.publish("orders", "d", "e"), "IDs are never reused")
}

func TestPublishScoresAreDueTimesOnTheRedisClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", pubsub.DefaultGroup)
	before := e.redisNow()
	got, err := e.b.Publish(e.ctx, &pubsub.PublishParams{Topic: "t", Messages: []pubsub.OutMessage{
		{Envelope: envelope("now")},
		{Envelope: envelope("soon"), Delay: 250 * time.Millisecond},
		{Envelope: envelope("later"), Delay: time.Hour},
		{Envelope: envelope("sub-ms"), Delay: 1500 * time.Microsecond},
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2", "3", "4"}, got)

	now := e.zscore(k.ready, mem("1"))
	require.InDelta(t, before, now, 5_000)
	require.Equal(t, now+250, e.zscore(k.ready, mem("2")), "due at the batch's now + delay, in ms")
	require.Equal(t, now+3_600_000, e.zscore(k.ready, mem("3")))
	require.Equal(t, now+2, e.zscore(k.ready, mem("4")), "a delay is rounded up to whole ms, never early")
	require.Equal(t, []string{"now"}, payloads(e.claim("t", pubsub.DefaultGroup, "c", 1)))
}

func TestFanOutStoresBodyOnceAndDeletesItAfterTheLastAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ensureGroup("t", "a")
	e.ensureGroup("t", "b")
	id := e.publishWith("t", 0, 3, "x")[0]
	a, b := e.gk("t", "a"), e.gk("t", "b")

	require.Len(t, e.hash(a.topic.bodies), 1)
	require.Equal(t, map[string]string{id: "2"}, e.hash(a.topic.refs))
	require.Equal(t, map[string]string{id: "3"}, e.hash(a.topic.priorities), "stored once, like the body")
	require.Equal(t, e.zrange(a.ready), e.zrange(b.ready), "the same member and due time in both groups")
	require.Equal(t, []string{memp(id, 3)}, e.zmembers(a.ready))
	require.Equal(t, []string{"1"}, e.lrange(a.wake), "each group's consumers are woken")
	require.Equal(t, []string{"1"}, e.lrange(b.wake))
	require.False(t, e.exists(e.gk("t", pubsub.DefaultGroup).ready), "default is not registered")

	da := e.claim("t", "a", "c", 1)
	require.Equal(t, pubsub.AckResult{Acked: 1}, e.ack("t", "a", "c", da...))
	require.Equal(t, map[string]string{id: "1"}, e.hash(a.topic.refs))
	require.Len(t, e.hash(a.topic.bodies), 1, "b still holds the body")

	db := e.claim("t", "b", "c", 1)
	require.Equal(t, []string{"x"}, payloads(db))
	require.Equal(t, pubsub.AckResult{Acked: 1}, e.ack("t", "b", "c", db...))
	require.Equal(t, []string{"g:a:counters", "g:a:wake", "g:b:counters", "g:b:wake", "groups", "seq"}, e.keys("t"),
		"body, refs and priority go with the last ack")
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
