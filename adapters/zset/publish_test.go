package zset

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func TestPublishClaimAckLeavesOnlyCountersAndRegistry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("orders", backend.DefaultGroup)
	e.EnsureGroup("orders", backend.DefaultGroup)

	before := e.redisNow()
	ids := e.Publish("orders", "a", "b", "c")
	after := e.redisNow()
	require.Equal(t, adaptertest.IDsFrom(t, ids[0], 3), ids, "one ID after the other")
	queue := e.queue(k)
	require.Equal(t, ids, qids(queue))
	due := queue[0].due
	require.Equal(t, redis.Z{Score: PriorityMax, Member: qmem(ids[0], due)}, e.zrange(k.queue)[0],
		"the rank of priority 0; the due time, then the padded ID")
	for _, x := range queue {
		require.Equal(t, due, x.due, "one due time, Redis now, for the whole batch")
	}
	require.GreaterOrEqual(t, float64(due), before)
	require.LessOrEqual(t, float64(due), after)
	require.Len(t, e.Hash(k.bodies), 3)
	require.False(t, e.Exists(k.refs), "one group: no reference counts")
	require.False(t, e.Exists(k.wake), "no consumer is asleep: no wake-up token")
	require.Equal(t, []string{"bodies", "g:default:queue", "meta", "zregistry"}, e.Keys("orders"),
		"due now: straight to the queue; nothing in the due-time ZSET")
	groups, err := e.b.GroupNames(e.Ctx, "orders")
	require.NoError(t, err)
	require.Equal(t, []string{backend.DefaultGroup}, groups)

	first := e.Claim("orders", backend.DefaultGroup, "c1", 2)
	require.Equal(t, ids[:2], adaptertest.IDs(first))
	require.Equal(t, []string{"a", "b"}, adaptertest.Payloads(first))
	require.Equal(t, adaptertest.Envelope("a"), first[0].Envelope)
	require.Equal(t, 1, first[0].Attempt)
	require.Equal(t, []string{qmem(ids[2], due)}, e.ZMembers(k.queue))
	require.Equal(t, ids[:2], e.ZMembers(k.pending))
	require.Equal(t, ids[:2], e.ZMembers(k.pendingAt))
	since := int64(e.ZScore(k.pendingAt, ids[0]))
	require.Equal(t, float64(since), e.ZScore(k.pendingAt, ids[1]), "one now for the whole claim")
	require.Equal(t, float64(since+time.Minute.Milliseconds()), e.ZScore(k.pending, ids[0]), "leased until now + lease")
	require.Equal(t, map[string]record{ids[0]: {"c1", 1, since, due, 0}, ids[1]: {"c1", 1, since, due, 0}}, e.records(k),
		"holder, attempt, since, the due time each had and its priority")
	require.False(t, e.Exists(k.retries), "first deliveries: no retries recorded")
	require.False(t, e.Exists(k.wake), "more was due but nobody is asleep: no token to pass on")

	rest := e.Claim("orders", backend.DefaultGroup, "c1", 5)
	require.Equal(t, ids[2:], adaptertest.IDs(rest))

	require.Equal(t, backend.AckResult{Acked: 3}, e.Ack("orders", backend.DefaultGroup, "c1", append(first, rest...)...))
	require.Equal(t, []string{"g:default:counters", "meta", "zregistry"}, e.Keys("orders"))
	require.Equal(t, ids[2], e.Hash(k.meta)["seq"], "the last ID issued")
	c := e.Stats("orders", backend.DefaultGroup).Counters
	require.Equal(t, backend.Counters{Published: 3, Claimed: 3, Acked: 3}, c)

	require.Equal(t, backend.AckResult{Stale: 3}, e.Ack("orders", backend.DefaultGroup, "c1", append(first, rest...)...),
		"a repeated ack is a no-op, counted stale")
	require.Equal(t, adaptertest.IDsFrom(t, adaptertest.IDAfter(t, ids[2], 1), 2), e.Publish("orders", "d", "e"), "IDs are never reused")
}

func TestPublishScoresAreDueTimesOnTheRedisClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", backend.DefaultGroup)
	e.EnsureGroup("t", backend.DefaultGroup)
	before := e.redisNow()
	res, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{
		{Envelope: adaptertest.Envelope("now")},
		{Envelope: adaptertest.Envelope("soon"), Delay: 250 * time.Millisecond},
		{Envelope: adaptertest.Envelope("later"), Delay: time.Hour},
		{Envelope: adaptertest.Envelope("sub-ms"), Delay: 1500 * time.Microsecond},
	}})
	got := res.IDs
	require.NoError(t, err)
	require.Equal(t, adaptertest.IDsFrom(t, got[0], 4), got)

	queued := e.queue(k)
	require.Equal(t, got[:1], qids(queued), "due now: queued at once")
	now := float64(queued[0].due)
	require.InDelta(t, before, now, 5_000)
	require.Equal(t, now+250, e.ZScore(k.ready, mem(got[1])), "due at the batch's now + delay, in ms")
	require.Equal(t, now+3_600_000, e.ZScore(k.ready, mem(got[2])))
	require.Equal(t, now+2, e.ZScore(k.ready, mem(got[3])), "a delay is rounded up to whole ms, never early")
	require.Equal(t, []string{"now"}, adaptertest.Payloads(e.Claim("t", backend.DefaultGroup, "c", 1)))
}

func TestFanOutStoresBodyOnceAndDeletesItAfterTheLastAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "a")
	e.EnsureGroup("t", "b")
	id := e.PublishWith("t", 0, 3, "x")[0]
	a, b := e.gk("t", "a"), e.gk("t", "b")

	require.Len(t, e.Hash(a.bodies), 1)
	require.Equal(t, map[string]string{id: "2"}, e.Hash(a.refs))
	require.Equal(t, e.zrange(a.queue), e.zrange(b.queue), "the same member and rank in both groups")
	require.Equal(t, []qentry{{id: id, due: e.queue(a)[0].due, priority: 3}}, e.queue(a), "the priority is in the score")
	require.False(t, e.Exists(e.gk("t", backend.DefaultGroup).queue), "default is not registered")

	da := e.Claim("t", "a", "c", 1)
	require.Equal(t, backend.AckResult{Acked: 1}, e.Ack("t", "a", "c", da...))
	require.Equal(t, map[string]string{id: "1"}, e.Hash(a.refs))
	require.Len(t, e.Hash(a.bodies), 1, "b still holds the body")

	db := e.Claim("t", "b", "c", 1)
	require.Equal(t, []string{"x"}, adaptertest.Payloads(db))
	require.Equal(t, backend.AckResult{Acked: 1}, e.Ack("t", "b", "c", db...))
	require.Equal(t, []string{"g:a:counters", "g:b:counters", "meta", "zregistry"}, e.Keys("t"),
		"body and refs go with the last ack")
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
	require.Equal(t, map[string]string{second[0]: "2"}, e.Hash(e.gk("t", "late").refs),
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
