package streams

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// deadLetterIDs pages through the group's dead letters count at a time from offset 0 and
// returns their delivery IDs in the order the pages gave them.
func (e *env) deadLetterIDs(topic, group string, count int) []string {
	e.T.Helper()
	var ids []string
	for offset := 0; ; offset += count {
		page, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: topic, Group: group, Offset: offset, Count: count})
		require.NoError(e.T, err)
		for _, dl := range page {
			ids = append(ids, dl.ID)
		}
		if len(page) < count {
			return ids
		}
	}
}

// requireDeadOrder checks the rank index against the dead-letter stream: one member per dead
// letter, its entry ID padded, in stream order.
func (e *env) requireDeadOrder(topic, group string) {
	e.T.Helper()
	k := e.gk(topic, group)
	entries, err := e.C.XRange(e.Ctx, k.dead, "-", "+").Result()
	require.NoError(e.T, err)
	members, err := e.C.ZRange(e.Ctx, k.deadOrder, 0, -1).Result()
	require.NoError(e.T, err)
	want := make([]string, len(entries))
	for i, en := range entries {
		want[i] = en.ID
	}
	got := make([]string, len(members))
	for i, m := range members {
		got[i] = unpadID(m)
	}
	require.Equal(e.T, want, got)
}

func payloads(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// Pages are read by rank from the dead_order index, not by skipping the offset: each dead
// letter comes exactly once, in order, at any offset, and stays so through requeues by ID
// (from the middle), purges (from the front) and dead letters added meanwhile.
func TestDeadLetterPagesReturnEachOnceInOrderAtAnyOffset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	var dead []string
	// Several nack calls, and more than ten dead letters in one millisecond, so that string
	// order of unpadded IDs would be wrong.
	for batch := range 3 {
		e.Publish("t", payloads("b"+strconv.Itoa(batch)+"-", 90)...)
		ds := e.Claim("t", "g", "c", 90)
		require.Len(t, ds, 90)
		items := make([]backend.NackItem, len(ds))
		for i, d := range ds {
			items[i] = backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: "bad"}
			dead = append(dead, d.ID)
		}
		require.Equal(t, backend.NackResult{DeadLettered: 90}, e.Nack("t", "g", "c", 0, items...))
	}
	e.requireDeadOrder("t", "g")
	for _, count := range []int{1, 7, 100, 270, 1000} {
		require.Equal(t, dead, e.deadLetterIDs("t", "g", count), "pages of %d", count)
	}
	page, err := e.b.DeadLetters(e.Ctx, &backend.DeadLettersParams{Topic: "t", Group: "g", Offset: 265, Count: 10})
	require.NoError(t, err)
	require.Len(t, page, 5, "the last page")
	require.Equal(t, dead[265:], []string{page[0].ID, page[1].ID, page[2].ID, page[3].ID, page[4].ID})

	// Requeue from the middle, purge from the front.
	n, err := e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", IDs: dead[100:150]})
	require.NoError(t, err)
	require.Equal(t, 50, n)
	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g", All: true, Limit: 30})
	require.NoError(t, err)
	require.Equal(t, 30, n)
	left := append(append([]string{}, dead[30:100]...), dead[150:]...)
	e.requireDeadOrder("t", "g")
	require.Equal(t, left, e.deadLetterIDs("t", "g", 7))
	require.Equal(t, counts{Ready: 50, Dead: int64(len(left))}, e.counts("t", "g"))

	// The requeued ones die again: they come after the others.
	ds := e.Claim("t", "g", "c", 50)
	require.Len(t, ds, 50)
	items := make([]backend.NackItem, len(ds))
	for i, d := range ds {
		items[i] = backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true}
	}
	e.Nack("t", "g", "c", 0, items...)
	e.requireDeadOrder("t", "g")
	require.Equal(t, append(left, dead[100:150]...), e.deadLetterIDs("t", "g", 33))

	// Emptied by a requeue of all and by a purge, the index goes with the stream.
	n, err = e.b.RequeueDeadLetters(e.Ctx, &backend.RequeueParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 240, n)
	require.NotContains(t, e.Keys("t"), "g:g:dead_order")
	require.NotContains(t, e.Keys("t"), "g:g:dead")
	require.Empty(t, e.deadLetterIDs("t", "g", 10))
	for _, d := range e.Claim("t", "g", "c", 240) {
		e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
	}
	e.requireDeadOrder("t", "g")
	n, err = e.b.PurgeDeadLetters(e.Ctx, &backend.PurgeParams{Topic: "t", Group: "g", All: true})
	require.NoError(t, err)
	require.Equal(t, 240, n)
	require.NotContains(t, e.Keys("t"), "g:g:dead_order")
}

// An expired lease at max deliveries is dead-lettered by reclaim.lua, which keeps the index too.
func TestReclaimedDeadLettersAreIndexedForPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	published := e.Publish("t", payloads("x", 12)...)
	e.ClaimLease("t", "g", "c", 12, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return e.ReclaimLease("t", "g", 1, time.Hour).DeadLettered == 12
	}, 5*time.Second, 20*time.Millisecond)
	e.requireDeadOrder("t", "g")
	require.Equal(t, published, e.deadLetterIDs("t", "g", 5))
}

// The page is the stream between its first and last indexed IDs, read with one XRANGE: an
// entry there that the index lacks (relq never writes one; another program could) is left
// out, and the page still holds every indexed dead letter of its ranks.
func TestDeadLetterPageSkipsAnEntryTheIndexLacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	bury := func(n int) []string {
		e.Publish("t", payloads("x", n)...)
		var ids []string
		for _, d := range e.Claim("t", "g", "c", n) {
			e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true})
			ids = append(ids, d.ID)
		}
		return ids
	}
	dead := bury(3)
	foreign := map[string]any{"_relq_id": "1-1", "_relq_reason": "r", "_relq_attempts": "1", "_relq_dead_at": "1",
		"_relq_topic": "t", "_relq_group": "g"}
	require.NoError(t, e.C.XAdd(e.Ctx, &redis.XAddArgs{Stream: k.dead, Values: foreign}).Err())
	dead = append(dead, bury(3)...)

	require.Equal(t, dead, e.deadLetterIDs("t", "g", 6))
	require.Equal(t, dead, e.deadLetterIDs("t", "g", 4))
}
