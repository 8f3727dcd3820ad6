package streams

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/seal"
	"github.com/stretchr/testify/require"
)

func TestDeadLetterMovesToTheDeadStreamAtomicallyWithTheXACK(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	id := e.Publish("t", "x")[0]
	d := e.Claim("t", "g", "c", 1)[0]
	before := e.redisNow()

	res := e.Nack("t", "g", "c", 1, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Reason: "boom"})
	after := e.redisNow()
	require.Equal(t, backend.NackResult{DeadLettered: 1}, res)
	require.Empty(t, e.pel("t", "g"), "acked")
	require.Empty(t, e.retry("t", "g"))
	entries, err := e.C.XRange(e.Ctx, k.dead, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	v := entries[0].Values
	require.Equal(t, id, v["_relq_id"])
	require.Equal(t, "boom", v["_relq_reason"])
	require.Equal(t, "1", v["_relq_attempts"])
	require.Equal(t, "t", v["_relq_topic"])
	require.Equal(t, "g", v["_relq_group"])
	require.Contains(t, v, FieldEnvelope, "the entry's own fields are kept")
	require.Equal(t, map[string]string{id: entries[0].ID}, e.Hash(k.deadIndex))
	require.Equal(t, map[string]string{id: "1"}, e.Hash(k.topic.deadRefs))
	require.Equal(t, counts{Dead: 1}, e.counts("t", "g"))

	dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, backend.DeadLetter{ID: id, Topic: "t", Group: "g", Envelope: adaptertest.Envelope("x"), Reason: "boom",
		Attempts: 1, DeadAt: dls[0].DeadAt}, dls[0])
	require.WithinRange(t, dls[0].DeadAt, before.Truncate(time.Millisecond), after, "dead at the nack, Redis clock")
	require.Empty(t, e.Claim("t", "g", "c", 1), "never delivered again")
}

func TestRequeueResetsTheDeliveryCountAndKeepsTheDeliveryID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	id := e.Publish("t", "x")[0]
	for attempt := 1; attempt <= 3; attempt++ {
		d := e.Claim("t", "g", "c", 1)[0]
		require.Equal(t, attempt, d.Attempt)
		e.Nack("t", "g", "c", 3, backend.NackItem{ID: d.ID, Attempt: d.Attempt})
	}
	require.Equal(t, counts{Dead: 1}, e.counts("t", "g"))

	n, err := e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", IDs: []string{id, "1-1"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, map[string]pel{id: {ParkedConsumer, 0}}, e.pel("t", "g"), "back in the PEL, count reset (RETRYCOUNT 0)")
	require.Contains(t, e.retry("t", "g"), id)
	require.Equal(t, counts{Ready: 1}, e.counts("t", "g"))
	require.NotContains(t, e.Keys("t"), "g:g:dead")
	require.Empty(t, e.Hash(k.deadIndex))
	require.Empty(t, e.Hash(k.topic.deadRefs))

	d := e.Claim("t", "g", "c", 1)[0]
	require.Equal(t, id, d.ID)
	require.Equal(t, 1, d.Attempt, "attempts start again")
}

func TestRequeueAllSkipsDeadLettersWhoseEntryWasTrimmed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 2 })
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "1", "2", "3", "4", "5")
	ds := e.Claim("t", "g", "c", 5)
	for _, d := range ds {
		e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: 1, DeadLetter: true, Reason: "bad"})
	}
	// Trimming is blind to dead letters: the oldest entry goes.
	_, err := e.C.XDel(e.Ctx, e.tk("t").stream, published[0]).Result()
	require.NoError(t, err)

	n, err := e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 4, n, "several batches of 2")
	dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, published[0], dls[0].ID)
	require.Equal(t, adaptertest.Envelope("1"), dls[0].Envelope, "the dead letter kept its own copy")
	require.Equal(t, published[1:], adaptertest.IDs(e.Claim("t", "g", "c", 10)))
}

func TestPurgeDeletesDeadLettersAndWithDeleteOnAckTheirEntries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, deleteOnAck)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "other")
	e.Publish("t", "1", "2")
	for _, d := range e.Claim("t", "g", "c", 2) {
		e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: 1, DeadLetter: true})
	}
	e.Ack("t", "other", "c", e.Claim("t", "other", "c", 2)...)
	require.Equal(t, int64(2), e.xlen(k.topic.stream), "kept for a requeue while they are dead letters")

	n, err := e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Zero(t, e.xlen(k.topic.stream))
	require.Equal(t, counts{}, e.counts("t", "g"))
	require.Equal(t, []string{"g:g:counters", "g:g:holders", "g:g:leases", "g:other:counters", "g:other:holders",
		"g:other:leases", "meta", "published", "stream"}, e.Keys("t"),
		"meta holds the publish lane's record")
}

// A purge by IDs deletes only the group's dead letters among them, in calls of at most
// BatchSize ids; with delete-on-ack, a purged letter's entry goes once no group needs it.
func TestPurgeByIDsDeletesOnlyThoseDeadLettersAndWithDeleteOnAckTheirEntries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, deleteOnAck, func(o *Options) { o.BatchSize = 2 })
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "other")
	ids := e.Publish("t", "1", "2", "3", "4")
	for _, d := range e.Claim("t", "g", "c", 4) {
		e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: 1, DeadLetter: true})
	}
	// other is done with all but ids[3].
	e.Ack("t", "other", "c", e.Claim("t", "other", "c", 3)...)
	n, err := e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", IDs: ids[2:3]})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Calls {0, 1-1}, {1, 0 again}, {2, 3}: 2 is in the PEL again, 3 is needed by other.
	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g",
		IDs: []string{ids[0], "1-1", ids[1], ids[0], ids[2], ids[3]}})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Empty(t, e.deadLetterIDs("t", "g", 10))
	require.NotContains(t, e.Keys("t"), "g:g:dead")
	require.NotContains(t, e.Keys("t"), "g:g:dead_order")
	require.Empty(t, e.Hash(k.topic.deadRefs))
	require.Equal(t, map[string]pel{ids[2]: {ParkedConsumer, 0}}, e.pel("t", "g"), "the requeued one is untouched")
	require.Equal(t, counts{Ready: 1}, e.counts("t", "g"))
	entries, err := e.C.XRange(e.Ctx, k.topic.stream, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, []string{ids[2], ids[3]}, []string{entries[0].ID, entries[1].ID},
		"entries no group needs are deleted; those g or other still needs are kept")
	require.Equal(t, ids[2:3], adaptertest.IDs(e.Claim("t", "g", "c", 10)))
	require.Equal(t, ids[3:], adaptertest.IDs(e.Claim("t", "other", "c", 10)))
}

func TestDeadLetterOfACorruptEntryKeepsItsBytes(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) {
		topic := "t-" + e.Prefix
		raw := []byte("\x07not a message\x00\xff")
		require.NoError(t, seal.Open(e.b).InjectCorrupt(e.Ctx, topic, "g", raw))
		ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: topic, Group: "g", Consumer: "c", Count: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.ErrorIs(t, ds[0].Err, backend.ErrCorruptEntry)
		e.Nack(topic, "g", "c", 0, backend.NackItem{ID: ds[0].ID, Attempt: 1, DeadLetter: true, Reason: ds[0].Err.Error()})

		dls, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: topic, Group: "g"})
		require.NoError(t, err)
		require.Len(t, dls, 1)
		require.Equal(t, raw, dls[0].Raw)
		require.Contains(t, dls[0].Reason, "corrupt")
	})
}
