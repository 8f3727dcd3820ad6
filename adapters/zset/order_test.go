package zset

import (
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func TestMessagesDueTogetherComeInPublishOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	// One batch, one due time: the order rests on the members alone, across IDs of different
	// lengths ("9" < "10" only when padded: unpadded, Redis would put "10" before "9"). A topic
	// created by an earlier build counts its IDs from 1, so they cross lengths.
	require.NoError(t, e.C.HSet(e.Ctx, k.meta, "seq", 0).Err())
	var want []string
	for i := 1; i <= 12; i++ {
		want = append(want, strconv.Itoa(i))
	}
	require.Equal(t, want, e.Publish("t", want...))
	zs := e.zrange(k.queue)
	require.Equal(t, want, qids(e.queue(k)))
	require.True(t, slices.IsSorted(members(zs)), "ZSET order is bytewise member order among equal scores")

	require.Equal(t, want[:5], adaptertest.IDs(e.Claim("t", "g", "c", 5)))
	require.Equal(t, want[5:], adaptertest.IDs(e.Claim("t", "g", "c", 50)))
}

func TestPriorityOrdersMessagesDueTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	batch := []struct {
		payload  string
		priority int
	}{
		{"a", 0}, {"b", 5}, {"c", 0}, {"d", -3}, {"e", 5}, {"max", math.MaxInt}, {"min", math.MinInt}, {"f", -3},
	}
	msgs := make([]backend.OutMessage, len(batch))
	for i, m := range batch {
		msgs[i] = backend.OutMessage{Envelope: adaptertest.Envelope(m.payload), Priority: m.priority}
	}
	res, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: msgs})
	got := res.IDs
	require.NoError(t, err)
	require.Equal(t, adaptertest.IDsFrom(t, got[0], 8), got)
	id := func(n int) string { return got[n-1] } // the n-th published

	q := e.queue(k)
	due := q[0].due
	require.Equal(t, []qentry{{id(6), due, PriorityMax}, {id(2), due, 5}, {id(5), due, 5}, {id(1), due, 0}, {id(3), due, 0},
		{id(4), due, -3}, {id(8), due, -3}, {id(7), due, PriorityMin}}, q,
		"higher priority first, publish order within one; out-of-range priorities clamped")
	require.Equal(t, []float64{0, 2 * PriorityMax}, []float64{e.zrange(k.queue)[0].Score, e.zrange(k.queue)[7].Score},
		"the score is the rank PriorityMax - priority")

	ds := e.Claim("t", "g", "c", 3)
	require.Equal(t, []string{"max", "b", "e"}, adaptertest.Payloads(ds))
	recs := e.records(k)
	require.Equal(t, [3]int{PriorityMax, 5, 5}, [3]int{recs[id(6)].priority, recs[id(2)].priority, recs[id(5)].priority},
		"a pending message keeps its clamped priority in its holders record, for a retry")
	ds = append(ds, e.Claim("t", "g", "c", 10)...)
	require.Equal(t, []string{"max", "b", "e", "a", "c", "d", "f", "min"}, adaptertest.Payloads(ds))
	require.Equal(t, PriorityMin, e.records(k)[id(7)].priority)
	require.Equal(t, backend.AckResult{Acked: 8}, e.Ack("t", "g", "c", ds...))
	require.Equal(t, []string{"g:g:counters", "meta", "zregistry"}, e.Keys("t"),
		"a priority is stored nowhere but with its message")
}

// Among the messages that are due, higher priority goes first, although a lower one has been
// due for longer: a priority is not a tie-break of due times. Within a priority, the one due
// first goes first, whether it was published due now or delayed.
func TestADueHigherPriorityGoesBeforeLowerOnesDueEarlier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	res, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{
		{Envelope: adaptertest.Envelope("urgent, due later"), Delay: 20 * time.Millisecond, Priority: 9},
		{Envelope: adaptertest.Envelope("normal, due first")},
		{Envelope: adaptertest.Envelope("normal, delayed"), Delay: 10 * time.Millisecond},
		{Envelope: adaptertest.Envelope("urgent, due last"), Delay: 30 * time.Millisecond, Priority: 9},
	}})
	ids := res.IDs
	require.NoError(t, err)
	require.Len(t, ids, 4)
	require.Equal(t, ids[1:2], qids(e.queue(k)), "due now: queued at once")
	due := float64(e.queue(k)[0].due)
	require.Equal(t, []redis.Z{zmember(due+10, mem(ids[2])), zmember(due+20, memp(ids[0], 9)), zmember(due+30, memp(ids[3], 9))},
		e.zrange(k.ready), "delayed: by due time, with the priority in the member")
	require.Eventually(t, func() bool { return e.Stats("t", "g").Ready == 4 }, 5*time.Second, time.Millisecond)

	require.Equal(t, []string{"urgent, due later", "urgent, due last", "normal, due first", "normal, delayed"},
		adaptertest.Payloads(e.Claim("t", "g", "c", 4)))
}

// A claim moves due members of the due-time ZSET to the queue, earliest due first and at most
// BatchSize of them, before it takes the head of the queue. A high-priority message due behind
// more than BatchSize low-priority ones waits for the claims that move those first.
func TestClaimMovesAtMostBatchSizeDueMembersToTheQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 3 })
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	low := e.PublishDelayed("t", time.Hour, "l1", "l2", "l3", "l4")
	high := e.PublishWith("t", time.Hour, 5, "high")[0]
	now := e.redisNow()
	for i, id := range low { // due in this order, before "high"
		require.NoError(t, e.C.ZAddXX(e.Ctx, k.ready, zmember(now-100+float64(i), mem(id))).Err())
	}
	require.NoError(t, e.C.ZAddXX(e.Ctx, k.ready, zmember(now-50, memp(high, 5))).Err())
	require.Equal(t, int64(5), e.Stats("t", "g").Ready)

	require.Equal(t, []string{"l1"}, adaptertest.Payloads(e.Claim("t", "g", "c", 1)))
	require.Equal(t, low[1:3], qids(e.queue(k)), "three moved, the earliest due; one of them claimed")
	require.Equal(t, []string{mem(low[3]), memp(high, 5)}, e.ZMembers(k.ready))
	require.Equal(t, int64(now)-99, e.queue(k)[0].due, "a moved message keeps its due time")

	require.Equal(t, []string{"high"}, adaptertest.Payloads(e.Claim("t", "g", "c", 1)),
		"the next claim moves the rest, and the high priority goes first")
	require.False(t, e.Exists(k.ready))
	require.Equal(t, []string{"l2", "l3", "l4"}, adaptertest.Payloads(e.Claim("t", "g", "c", 3)))
}

// Data written by builds that kept every message in the due-time ZSET, scored by due time,
// is read as it is: a claim moves the due members to the queue in turn, with their priority.
func TestMessagesOfTheEarlierLayoutAreClaimedByPriority(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	now := e.redisNow()
	for i, m := range []struct {
		payload  string
		priority int
		due      float64
	}{{"old low", 0, now - 60_000}, {"old high", 3, now - 1_000}, {"old later", 3, now + 60_000}} {
		id := strconv.Itoa(i + 1)
		require.NoError(t, e.C.HSet(e.Ctx, k.bodies, id, backend.EncodeEnvelope(adaptertest.Envelope(m.payload))).Err())
		require.NoError(t, e.C.ZAdd(e.Ctx, k.ready, zmember(m.due, memp(id, m.priority))).Err())
	}
	require.NoError(t, e.C.HSet(e.Ctx, k.meta, "seq", 3).Err())
	e.Publish("t", "new")
	s := e.Stats("t", "g")
	require.Equal(t, [2]int64{3, 1}, [2]int64{s.Ready, s.Delayed})
	require.InDelta(t, time.Minute, s.OldestReadyAge, float64(5*time.Second))

	require.Equal(t, []string{"old high", "old low", "new"}, adaptertest.Payloads(e.Claim("t", "g", "c", 10)))
	require.Equal(t, []string{memp("3", 3)}, e.ZMembers(k.ready), "not due: it waits")
}

func TestClaimNeverTakesAMemberThatIsNotDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	res, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{
		{Envelope: adaptertest.Envelope("future, top priority"), Delay: time.Hour, Priority: PriorityMax},
		{Envelope: adaptertest.Envelope("due now")},
	}})
	ids := res.IDs
	require.NoError(t, err)

	require.Equal(t, []string{"due now"}, adaptertest.Payloads(e.Claim("t", "g", "c", 10)),
		"the lowest score is due; a bare ZPOPMIN of two would also have taken the future one")
	require.Empty(t, e.Claim("t", "g", "c", 10))
	require.Equal(t, []string{memp(ids[0], PriorityMax)}, e.ZMembers(k.ready), "untouched")
	s := e.Stats("t", "g")
	require.Equal(t, [3]int64{0, 1, 1}, [3]int64{s.Ready, s.Delayed, s.Pending})

	// Once its score is in the past on the Redis clock, it is due.
	require.NoError(t, e.C.ZAddXX(e.Ctx, k.ready, zmember(e.redisNow()-1, memp(ids[0], PriorityMax))).Err())
	require.Equal(t, []string{"future, top priority"}, adaptertest.Payloads(e.Claim("t", "g", "c", 10)))
}
