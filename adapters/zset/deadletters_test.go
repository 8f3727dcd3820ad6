package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/seal"
	"github.com/stretchr/testify/require"
)

func TestDeadLetterListRequeueAndPurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "other")
	idsRes, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{
		{Envelope: adaptertest.Envelope("a")}, {Envelope: adaptertest.Envelope("b")}, {Envelope: adaptertest.Envelope("c"), Priority: 4},
	}})
	ids := idsRes.IDs
	require.NoError(t, err)
	require.Len(t, ids, 3)
	before := time.Now()

	var items []backend.NackItem
	for _, d := range e.Claim("t", "g", "c", 3) {
		items = append(items, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Reason: "boom " + d.ID})
	}
	require.Equal(t, ids[2], items[0].ID, "due together: priority 4 first")
	items[0].Reason = ""
	require.Equal(t, backend.NackResult{DeadLettered: 3}, e.Nack("t", "g", "c", 1, items...))
	require.False(t, e.Exists(k.pending))
	require.False(t, e.Exists(k.pendingAt))
	require.False(t, e.Exists(k.holders))
	require.Equal(t, int64(3), e.Stats("t", "g").Dead)

	dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 3)
	require.Equal(t, ids, []string{dls[0].ID, dls[1].ID, dls[2].ID})
	require.Equal(t, "t", dls[0].Topic)
	require.Equal(t, "g", dls[0].Group)
	require.Equal(t, adaptertest.Envelope("a"), dls[0].Envelope)
	require.Nil(t, dls[0].Raw)
	require.Equal(t, "boom "+ids[0], dls[0].Reason)
	require.Equal(t, "nacked after 1 attempts", dls[2].Reason)
	require.Equal(t, 1, dls[0].Attempts)
	require.WithinDuration(t, before, dls[0].DeadAt, 5*time.Second)
	require.Regexp(t, `^1\|\d+:4\|nacked after 1 attempts$`, e.Hash(k.deadInfo)[ids[2]],
		"attempts, the due time and priority it had (for a requeue), reason")

	page, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g", Offset: 1, Count: 1})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, ids[1], page[0].ID)

	requeuedAt := e.redisNow()
	n, err := e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", IDs: []string{ids[1], "404"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	q := e.queue(k)
	require.Equal(t, ids[1:2], qids(q))
	require.GreaterOrEqual(t, float64(q[0].due), requeuedAt, "due now")
	d := e.Claim("t", "g", "c", 1)
	require.Equal(t, 1, d[0].Attempt, "attempts reset")
	require.Equal(t, backend.AckResult{Acked: 1}, e.Ack("t", "g", "c", d...))

	n, err = e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	q = e.queue(k)
	require.Equal(t, []string{ids[2], ids[0]}, qids(q), "requeued together: the priority still counts")
	require.Equal(t, [2]int{4, 0}, [2]int{q[0].priority, q[1].priority})
	require.False(t, e.Exists(k.dead))
	require.False(t, e.Exists(k.deadInfo))

	var again []backend.NackItem
	for _, d := range e.Claim("t", "g", "c", 2) {
		again = append(again, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: "again"})
	}
	require.Equal(t, backend.NackResult{DeadLettered: 2}, e.Nack("t", "g", "c", 0, again...))
	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []string{"bodies", "g:g:counters", "g:g:wake", "g:other:queue", "meta", "refs", "zregistry"}, e.Keys("t"))
	require.Equal(t, map[string]string{ids[0]: "1", ids[1]: "1", ids[2]: "1"}, e.Hash(k.refs), "other still holds all three")

	// Purging the last holder deletes the bodies.
	var last []backend.NackItem
	for _, d := range e.Claim("t", "other", "c", 3) {
		last = append(last, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
	}
	require.Equal(t, 3, e.Nack("t", "other", "c", 0, last...).DeadLettered)
	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "other", All: true})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, []string{"g:g:counters", "g:g:wake", "g:other:counters", "meta", "zregistry"}, e.Keys("t"))
}

func TestRequeueAndPurgeWorkInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 2 })
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a", "b", "c", "d", "e")
	var items []backend.NackItem
	for len(items) < 5 {
		for _, d := range e.Claim("t", "g", "c", 5) {
			items = append(items, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
		}
	}
	require.Equal(t, 5, e.Nack("t", "g", "c", 0, items...).DeadLettered)

	n, err := e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", IDs: ids[:3]})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Len(t, e.queue(e.gk("t", "g")), 5)

	items = items[:0]
	for len(items) < 5 {
		for _, d := range e.Claim("t", "g", "c", 5) {
			items = append(items, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
		}
	}
	require.Equal(t, 5, e.Nack("t", "g", "c", 0, items...).DeadLettered)
	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, []string{"g:g:counters", "g:g:wake", "meta", "zregistry"}, e.Keys("t"))
}

func TestCorruptEntryIsReportedAndDeadLetteredWithItsBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	raw := []byte("\xffnot an envelope")
	require.NoError(t, seal.Open(e.b).InjectCorrupt(e.Ctx, "t", "g", raw))
	require.Equal(t, []string{"1"}, e.LRange(e.gk("t", "g").wake), "a blocked consumer is woken for it")
	fine := e.Publish("t", "fine")

	ds := e.Claim("t", "g", "c", 5)
	require.Len(t, ds, 2)
	require.Equal(t, []string{adaptertest.IDAfter(t, fine[0], -1), fine[0]}, adaptertest.IDs(ds),
		"the corrupt entry took the topic's first ID")
	require.Equal(t, 1, ds[0].Attempt)
	require.ErrorIs(t, ds[0].Err, backend.ErrCorruptEntry)
	require.NoError(t, ds[1].Err)

	res := e.Nack("t", "g", "c", 0, backend.NackItem{ID: ds[0].ID, Attempt: 1, DeadLetter: true, Reason: ds[0].Err.Error()})
	require.Equal(t, 1, res.DeadLettered)
	dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, raw, dls[0].Raw)
	require.Equal(t, backend.Envelope{}, dls[0].Envelope)
	require.Equal(t, ds[0].Err.Error(), dls[0].Reason)
}

// Members relq did not write, in either ZSET, are dropped by the claim that meets them. A
// member whose body is gone is leased like any other and claimed with an error naming the
// missing body, which the subscriber dead-letters: it does not vanish unseen.
func TestReadyMembersWithoutBodyAreClaimedAsMissingAndForeignOnesDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	kept := e.Publish("t", "kept")[0]
	for _, m := range []string{mem("77"), "not-a-member"} { // due long ago: score 1
		require.NoError(t, e.C.ZAdd(e.Ctx, k.ready, zmember(1, m)).Err())
	}
	for _, m := range []string{"not-a-member", qmem("12", 1)[1:], qmem("12", 1) + "3"} { // claimed first: rank 0
		require.NoError(t, e.C.ZAdd(e.Ctx, k.queue, zmember(0, m)).Err())
	}
	require.NoError(t, e.C.HSet(e.Ctx, k.retries, "77", 3).Err())

	ds := e.Claim("t", "g", "c", 5)
	require.Len(t, ds, 2)
	byID := map[string]backend.Delivery{}
	for _, d := range ds {
		byID[d.ID] = d
	}
	require.Equal(t, 4, byID["77"].Attempt)
	require.ErrorIs(t, byID["77"].Err, backendkit.ErrBodyMissing)
	require.Equal(t, "kept", string(byID[kept].Envelope.Payload))
	require.Equal(t, 1, byID[kept].Attempt)
	require.False(t, e.Exists(k.ready))
	require.False(t, e.Exists(k.queue))
	require.ElementsMatch(t, []string{kept, "77"}, e.ZMembers(k.pending))
	require.False(t, e.Exists(k.retries))
	require.Equal(t, int64(2), e.Stats("t", "g").Counters.Claimed)
}
