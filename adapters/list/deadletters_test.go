package list

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
	ids := e.Publish("t", "a", "b", "c")
	before := time.Now()

	var items []backend.NackItem
	for _, d := range e.Claim("t", "g", "c", 3) {
		items = append(items, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Reason: "boom " + d.ID})
	}
	items[2].Reason = ""
	require.Equal(t, backend.NackResult{DeadLettered: 3}, e.Nack("t", "g", "c", 1, items...))
	require.False(t, e.Exists(k.processing))
	require.False(t, e.Exists(k.pending))
	require.False(t, e.Exists(k.holders))
	require.Equal(t, int64(3), e.Stats("t", "g").Dead)

	dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 3)
	require.Equal(t, ids[0], dls[0].ID)
	require.Equal(t, "t", dls[0].Topic)
	require.Equal(t, "g", dls[0].Group)
	require.Equal(t, adaptertest.Envelope("a"), dls[0].Envelope)
	require.Nil(t, dls[0].Raw)
	require.Equal(t, "boom "+ids[0], dls[0].Reason)
	require.Equal(t, "nacked after 1 attempts", dls[2].Reason)
	require.Equal(t, 1, dls[0].Attempts)
	require.WithinDuration(t, before, dls[0].DeadAt, 5*time.Second)

	page, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g", Offset: 1, Count: 1})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, ids[1], page[0].ID)

	n, err := e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", IDs: []string{ids[1], "404"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{ids[1]}, e.readyIDs(k.ready))
	d := e.Claim("t", "g", "c", 1)
	require.Equal(t, 1, d[0].Attempt, "attempts reset")
	require.Equal(t, backend.AckResult{Acked: 1}, e.Ack("t", "g", "c", d...))

	n, err = e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []string{ids[2], ids[0]}, e.readyIDs(k.ready), "oldest dead letter claimed first")
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
	require.Equal(t, []string{"bodies", "g:g:counters", "g:other:ready", "meta", "refs", "registry"}, e.Keys("t"),
		"other has claimed nothing yet, so it has no counters")
	require.Equal(t, map[string]string{ids[0]: "1", ids[1]: "1", ids[2]: "1"}, e.Hash(k.topic.refs), "other still holds all three")

	// Purging the last holder deletes the bodies.
	var last []backend.NackItem
	for _, d := range e.Claim("t", "other", "c", 3) {
		last = append(last, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
	}
	require.Equal(t, 3, e.Nack("t", "other", "c", 0, last...).DeadLettered)
	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "other", All: true})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, []string{"g:g:counters", "g:other:counters", "meta", "registry"}, e.Keys("t"))
}

func TestRequeueAndPurgeWorkInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 2 })
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a", "b", "c", "d", "e")
	require.Equal(t, ids[:2], adaptertest.IDs(e.Claim("t", "g", "c", 5)), "a claim takes at most BatchSize")
	require.Equal(t, 2, e.Nack("t", "g", "c", 0, backend.NackItem{ID: ids[0], Attempt: 1, Release: true},
		backend.NackItem{ID: ids[1], Attempt: 1, Release: true}).Requeued)
	var items []backend.NackItem
	for _, d := range e.claimAll("t", "g", "c", 5) {
		items = append(items, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
	}
	require.Equal(t, 5, e.Nack("t", "g", "c", 0, items...).DeadLettered)

	n, err := e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", IDs: ids[:3]})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Len(t, e.readyIDs(e.gk("t", "g").ready), 5)

	items = items[:0]
	for _, d := range e.claimAll("t", "g", "c", 5) {
		items = append(items, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
	}
	require.Equal(t, 5, e.Nack("t", "g", "c", 0, items...).DeadLettered)
	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, []string{"g:g:counters", "meta", "registry"}, e.Keys("t"))
}

// A purge by IDs goes in calls of at most BatchSize ids and deletes only the group's dead
// letters among them; a body goes with the last group that held it.
func TestPurgeByIDsWorksInBatchesAndKeepsOtherGroupsBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 2 })
	k, ko := e.gk("t", "g"), e.gk("t", "other")
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "other")
	ids := e.Publish("t", "a", "b", "c", "d", "e")
	var items []backend.NackItem
	for _, d := range e.claimAll("t", "g", "c", 5) {
		items = append(items, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
	}
	require.Equal(t, 5, e.Nack("t", "g", "c", 0, items...).DeadLettered)
	d := e.Claim("t", "other", "c", 1)[0]
	require.Equal(t, ids[0], d.ID)
	require.Equal(t, 1, e.Nack("t", "other", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true}).DeadLettered)

	_, err := e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g", IDs: ids[:1], Limit: 1})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
	var ce *backend.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "PurgeParams.Limit", ce.Field)

	// Three calls: {0, 404}, {1, 0 again}, {3}.
	n, err := e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g", IDs: []string{ids[0], "404", ids[1], ids[0], ids[3]}})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.ElementsMatch(t, []string{ids[2], ids[4]}, e.ZMembers(k.dead))
	require.Len(t, e.Hash(k.deadInfo), 2)
	require.Equal(t, []string{ids[0]}, e.ZMembers(ko.dead), "the other group's dead letter")
	require.Len(t, e.Hash(k.topic.bodies), 5, "the other group holds every body")
	require.Equal(t, map[string]string{ids[0]: "1", ids[1]: "1", ids[2]: "2", ids[3]: "1", ids[4]: "2"}, e.Hash(k.topic.refs))

	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "other", IDs: ids[:2]})
	require.NoError(t, err)
	require.Equal(t, 1, n, "only ids[0] is a dead letter of other; ids[1] is ready there")
	require.NotContains(t, e.Hash(k.topic.bodies), ids[0], "purged by its last group")
	require.ElementsMatch(t, ids[1:], e.readyIDs(ko.ready))
	require.False(t, e.Exists(ko.dead))
}

func TestCorruptEntryIsReportedAndDeadLetteredWithItsBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	raw := []byte("\xffnot an envelope")
	require.NoError(t, seal.Open(e.b).InjectCorrupt(e.Ctx, "t", "g", raw))
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

// A ready id whose body is gone is leased like any other and claimed with an error naming
// the missing body, which the subscriber dead-letters: it does not vanish unseen.
func TestReadyIDWithoutBodyIsClaimedAsBodyMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	kept := e.Publish("t", "kept")
	require.NoError(t, e.C.RPush(e.Ctx, k.ready, "77@1").Err()) // at the consume end: claimed first

	ds := e.Claim("t", "g", "c", 5)
	require.Len(t, ds, 2)
	require.Equal(t, "77", ds[0].ID)
	require.ErrorIs(t, ds[0].Err, backendkit.ErrBodyMissing)
	require.ErrorIs(t, ds[0].Err, backend.ErrCorruptEntry)
	require.NoError(t, ds[1].Err)
	require.False(t, e.Exists(k.processing))
	require.ElementsMatch(t, []string{kept[0], "77"}, e.ZMembers(k.pending))
	require.Empty(t, e.LRange(k.ready))
	require.Equal(t, int64(2), e.Stats("t", "g").Counters.Claimed)

	res := e.Nack("t", "g", "c", 0, backend.NackItem{ID: "77", Attempt: 1, DeadLetter: true, Reason: ds[0].Err.Error()})
	require.Equal(t, 1, res.DeadLettered)
	dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Contains(t, dls[0].Reason, "body missing")
}
