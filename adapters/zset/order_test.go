package zset

import (
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestMessagesDueTogetherComeInPublishOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	// One batch, one due time: the order rests on the members alone, across IDs of different
	// lengths ("9" < "10" only when padded: unpadded, Redis would put "10" before "9").
	var want []string
	for i := 1; i <= 12; i++ {
		want = append(want, strconv.Itoa(i))
	}
	require.Equal(t, want, e.Publish("t", want...))
	zs := e.zrange(k.ready)
	require.Equal(t, mems(want...), members(zs))
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
	msgs := make([]pubsub.OutMessage, len(batch))
	for i, m := range batch {
		msgs[i] = pubsub.OutMessage{Envelope: adaptertest.Envelope(m.payload), Priority: m.priority}
	}
	got, err := e.b.Publish(e.Ctx, &pubsub.PublishParams{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2", "3", "4", "5", "6", "7", "8"}, got)

	require.Equal(t, []string{memp("6", PriorityMax), memp("2", 5), memp("5", 5), memp("1", 0), memp("3", 0),
		memp("4", -3), memp("8", -3), memp("7", PriorityMin)}, e.ZMembers(k.ready),
		"higher priority first, publish order within one; out-of-range priorities clamped")
	require.Equal(t, "0000000:0000000000000006", memp("6", PriorityMax))
	require.Equal(t, "1999998:0000000000000007", memp("7", PriorityMin))

	ds := e.Claim("t", "g", "c", 3)
	require.Equal(t, []string{"max", "b", "e"}, adaptertest.Payloads(ds))
	recs := e.records(k)
	require.Equal(t, [3]int{PriorityMax, 5, 5}, [3]int{recs["6"].priority, recs["2"].priority, recs["5"].priority},
		"a pending message keeps its clamped priority in its holders record, for a retry")
	ds = append(ds, e.Claim("t", "g", "c", 10)...)
	require.Equal(t, []string{"max", "b", "e", "a", "c", "d", "f", "min"}, adaptertest.Payloads(ds))
	require.Equal(t, PriorityMin, e.records(k)["7"].priority)
	require.Equal(t, pubsub.AckResult{Acked: 8}, e.Ack("t", "g", "c", ds...))
	require.Equal(t, []string{"g:g:counters", "meta", "zregistry"}, e.Keys("t"),
		"a priority is stored nowhere but with its message")
}

func TestEarlierDueTimeGoesBeforeHigherPriority(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	_, err := e.b.Publish(e.Ctx, &pubsub.PublishParams{Topic: "t", Messages: []pubsub.OutMessage{
		{Envelope: adaptertest.Envelope("urgent, due later"), Delay: 20 * time.Millisecond, Priority: 9},
		{Envelope: adaptertest.Envelope("normal, due first")},
	}})
	require.NoError(t, err)
	require.Equal(t, 20.0, e.ZScore(k.ready, memp("1", 9))-e.ZScore(k.ready, mem("2")))
	require.Eventually(t, func() bool { return e.Stats("t", "g").Ready == 2 }, 5*time.Second, time.Millisecond)

	require.Equal(t, []string{"normal, due first", "urgent, due later"}, adaptertest.Payloads(e.Claim("t", "g", "c", 2)),
		"a priority orders messages due together; it never moves a message ahead of one due earlier")
}

func TestClaimNeverTakesAMemberThatIsNotDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	_, err := e.b.Publish(e.Ctx, &pubsub.PublishParams{Topic: "t", Messages: []pubsub.OutMessage{
		{Envelope: adaptertest.Envelope("future, top priority"), Delay: time.Hour, Priority: PriorityMax},
		{Envelope: adaptertest.Envelope("due now")},
	}})
	require.NoError(t, err)

	require.Equal(t, []string{"due now"}, adaptertest.Payloads(e.Claim("t", "g", "c", 10)),
		"the lowest score is due; a bare ZPOPMIN of two would also have taken the future one")
	require.Empty(t, e.Claim("t", "g", "c", 10))
	require.Equal(t, []string{memp("1", PriorityMax)}, e.ZMembers(k.ready), "untouched")
	s := e.Stats("t", "g")
	require.Equal(t, [3]int64{0, 1, 1}, [3]int64{s.Ready, s.Delayed, s.Pending})

	// Once its score is in the past on the Redis clock, it is due.
	require.NoError(t, e.C.ZAddXX(e.Ctx, k.ready, zmember(e.redisNow()-1, memp("1", PriorityMax))).Err())
	require.Equal(t, []string{"future, top priority"}, adaptertest.Payloads(e.Claim("t", "g", "c", 10)))
}
