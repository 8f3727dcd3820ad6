package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestDeadLetterListRequeueAndPurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.ensureGroup("t", "other")
	_, err := e.b.Publish(e.ctx, &pubsub.PublishParams{Topic: "t", Messages: []pubsub.OutMessage{
		{Envelope: envelope("a")}, {Envelope: envelope("b")}, {Envelope: envelope("c"), Priority: 4},
	}})
	require.NoError(t, err)
	before := time.Now()

	var items []pubsub.NackItem
	for _, d := range e.claim("t", "g", "c", 3) {
		items = append(items, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, Reason: "boom " + d.ID})
	}
	require.Equal(t, "3", items[0].ID, "due together: priority 4 first")
	items[0].Reason = ""
	require.Equal(t, pubsub.NackResult{DeadLettered: 3}, e.nack("t", "g", "c", 1, items...))
	require.False(t, e.exists(k.leases))
	require.False(t, e.exists(k.dueAt))
	require.Equal(t, int64(3), e.stats("t", "g").Dead)

	dls, err := e.b.DeadLetters(e.ctx, &pubsub.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 3)
	require.Equal(t, []string{"1", "2", "3"}, []string{dls[0].ID, dls[1].ID, dls[2].ID})
	require.Equal(t, "1", dls[0].ID)
	require.Equal(t, "t", dls[0].Topic)
	require.Equal(t, "g", dls[0].Group)
	require.Equal(t, envelope("a"), dls[0].Envelope)
	require.Nil(t, dls[0].Raw)
	require.Equal(t, "boom 1", dls[0].Reason)
	require.Equal(t, "nacked after 1 attempts", dls[2].Reason)
	require.Equal(t, 1, dls[0].Attempts)
	require.WithinDuration(t, before, dls[0].DeadAt, 5*time.Second)

	page, err := e.b.DeadLetters(e.ctx, &pubsub.DeadLettersParams{Topic: "t", Group: "g", Offset: 1, Count: 1})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "2", page[0].ID)

	requeuedAt := e.redisNow()
	n, err := e.b.RequeueDeadLetters(e.ctx, &pubsub.RequeueParams{Topic: "t", Group: "g", IDs: []string{"2", "404"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, mems("2"), e.zmembers(k.ready))
	require.GreaterOrEqual(t, e.zscore(k.ready, mem("2")), requeuedAt, "due now")
	d := e.claim("t", "g", "c", 1)
	require.Equal(t, 1, d[0].Attempt, "attempts reset")
	require.Equal(t, pubsub.AckResult{Acked: 1}, e.ack("t", "g", "c", d...))

	n, err = e.b.RequeueDeadLetters(e.ctx, &pubsub.RequeueParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []string{memp("3", 4), mem("1")}, e.zmembers(k.ready), "requeued together: the priority still counts")
	require.False(t, e.exists(k.dead))
	require.False(t, e.exists(k.reasons))

	var again []pubsub.NackItem
	for _, d := range e.claim("t", "g", "c", 2) {
		again = append(again, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: "again"})
	}
	require.Equal(t, pubsub.NackResult{DeadLettered: 2}, e.nack("t", "g", "c", 0, again...))
	n, err = e.b.PurgeDeadLetters(e.ctx, &pubsub.PurgeParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []string{"bodies", "g:g:counters", "g:g:wake", "g:other:counters", "g:other:ready", "g:other:wake",
		"groups", "priorities", "refs", "seq"}, e.keys("t"))
	require.Equal(t, map[string]string{"1": "1", "2": "1", "3": "1"}, e.hash(k.topic.refs), "other still holds all three")

	// Purging the last holder deletes the bodies and the priority.
	var last []pubsub.NackItem
	for _, d := range e.claim("t", "other", "c", 3) {
		last = append(last, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
	}
	require.Equal(t, 3, e.nack("t", "other", "c", 0, last...).DeadLettered)
	n, err = e.b.PurgeDeadLetters(e.ctx, &pubsub.PurgeParams{Topic: "t", Group: "other"})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, []string{"g:g:counters", "g:g:wake", "g:other:counters", "g:other:wake", "groups", "seq"}, e.keys("t"))
}

func TestRequeueAndPurgeWorkInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, err := New(e.c, Options{Prefix: e.prefix, BatchSize: 2})
	require.NoError(t, err)
	e.b = b
	e.ensureGroup("t", "g")
	e.publish("t", "a", "b", "c", "d", "e")
	var items []pubsub.NackItem
	for len(items) < 5 {
		for _, d := range e.claim("t", "g", "c", 5) {
			items = append(items, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
		}
	}
	require.Equal(t, 5, e.nack("t", "g", "c", 0, items...).DeadLettered)

	n, err := b.RequeueDeadLetters(e.ctx, &pubsub.RequeueParams{Topic: "t", Group: "g", IDs: []string{"1", "2", "3"}})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = b.RequeueDeadLetters(e.ctx, &pubsub.RequeueParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Len(t, e.zmembers(e.gk("t", "g").ready), 5)

	items = items[:0]
	for len(items) < 5 {
		for _, d := range e.claim("t", "g", "c", 5) {
			items = append(items, pubsub.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
		}
	}
	require.Equal(t, 5, e.nack("t", "g", "c", 0, items...).DeadLettered)
	n, err = b.PurgeDeadLetters(e.ctx, &pubsub.PurgeParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, []string{"g:g:counters", "g:g:wake", "groups", "seq"}, e.keys("t"))
}

func TestCorruptEntryIsReportedAndDeadLetteredWithItsBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ensureGroup("t", "g")
	raw := []byte("\xffnot an envelope")
	require.NoError(t, e.b.Faults().InjectCorrupt(e.ctx, "t", "g", raw))
	require.Equal(t, []string{"1"}, e.lrange(e.gk("t", "g").wake), "a blocked consumer is woken for it")
	e.publish("t", "fine")

	ds := e.claim("t", "g", "c", 5)
	require.Len(t, ds, 2)
	require.Equal(t, "1", ds[0].ID)
	require.Equal(t, 1, ds[0].Attempt)
	require.ErrorIs(t, ds[0].Err, pubsub.ErrCorruptEntry)
	require.NoError(t, ds[1].Err)

	res := e.nack("t", "g", "c", 0, pubsub.NackItem{ID: ds[0].ID, Attempt: 1, DeadLetter: true, Reason: ds[0].Err.Error()})
	require.Equal(t, 1, res.DeadLettered)
	dls, err := e.b.DeadLetters(e.ctx, &pubsub.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, raw, dls[0].Raw)
	require.Equal(t, pubsub.Envelope{}, dls[0].Envelope)
	require.Equal(t, ds[0].Err.Error(), dls[0].Reason)
}

// Members whose body is gone, or that relq did not write, are dropped by the claim that meets
// them, and the claim goes on to the next.
func TestReadyMembersWithoutBodyOrOfForeignShapeAreDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.ensureGroup("t", "g")
	e.publish("t", "kept")
	for _, m := range []string{mem("77"), "not-a-member", "0999999:12"} { // claimed first: score 1
		require.NoError(t, e.c.ZAdd(e.ctx, k.ready, zmember(1, m)).Err())
	}
	require.NoError(t, e.c.HSet(e.ctx, k.attempts, "77", 3).Err())

	ds := e.claim("t", "g", "c", 5)
	require.Equal(t, []string{"kept"}, payloads(ds))
	require.False(t, e.exists(k.ready))
	require.Equal(t, []string{"1"}, e.zmembers(k.leases))
	require.Equal(t, map[string]string{"1": "1"}, e.hash(k.attempts))
	require.Equal(t, int64(1), e.stats("t", "g").Counters.Claimed)
}
