package streams

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// Ack, Nack and Extend look up a batch with one XPENDING of the caller's entries and ask the
// PEL alone about what that read cannot settle: IDs held by another consumer or parked, IDs
// not pending, IDs Redis cannot parse, and duplicates all come out as one by one would.
func TestSettleBatchesMixHeldStaleUnknownAndInvalidIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "1", "2", "3", "4", "5", "6")
	mine := e.Claim("t", "g", "c", 3)
	theirs := e.Claim("t", "g", "other", 2)
	parked := theirs[1]
	e.Nack("t", "g", "other", 0, backend.NackItem{ID: parked.ID, Attempt: 1, Delay: time.Hour})
	unknown := backend.Delivery{ID: "1-1", Attempt: 1}
	invalid := backend.Delivery{ID: "nope", Attempt: 1}

	lost := e.Extend("t", "g", "c", invalid, mine[0], theirs[0], unknown, mine[0], parked)
	require.Equal(t, []string{"nope", theirs[0].ID, "1-1", parked.ID}, lost)

	res := e.Nack("t", "g", "c", 0,
		backend.NackItem{ID: "nope", Attempt: 1},
		backend.NackItem{ID: mine[1].ID, Attempt: 1, Delay: time.Hour},
		backend.NackItem{ID: mine[1].ID, Attempt: 1, Delay: time.Hour},
		backend.NackItem{ID: theirs[0].ID, Attempt: 1},
		backend.NackItem{ID: mine[2].ID, Attempt: 2})
	require.Equal(t, backend.NackResult{Requeued: 1, Stale: 4}, res)
	require.Equal(t, map[string]pel{published[0]: {"c", 1}, published[1]: {ParkedConsumer, 1}, published[2]: {"c", 1},
		published[3]: {"other", 1}, published[4]: {ParkedConsumer, 1}}, e.pel("t", "g"))

	// Acked from any holder: the parked one loses its schedule, the others had none.
	ack := e.Ack("t", "g", "c", invalid, mine[0], mine[0], theirs[0], unknown, parked, mine[2])
	require.Equal(t, backend.AckResult{Acked: 4, Stale: 5}, ack)
	require.Equal(t, map[string]pel{published[1]: {ParkedConsumer, 1}}, e.pel("t", "g"))
	require.Equal(t, []string{published[1]}, keysOf(e.retry("t", "g")))
	require.Empty(t, e.ZMembers(k.pendingAt))
	require.Equal(t, backend.Counters{Published: 6, Claimed: 5, Acked: 4, Nacked: 2, StaleAcks: 5, StaleNacks: 4},
		e.Stats("t", "g").Counters)
}

// A consumer holding more entries than one XPENDING of a batch reads: the IDs beyond are
// asked alone, and every one is settled.
func TestSettleBatchOfAConsumerHoldingMany(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", payloads("x", 300)...)
	ds := e.Claim("t", "g", "c", 300)
	require.Len(t, ds, 300)
	last := ds[len(ds)-5:]
	require.Empty(t, e.Extend("t", "g", "c", last...))
	require.Equal(t, backend.AckResult{Acked: 5}, e.Ack("t", "g", "c", last...))
	spread := []backend.Delivery{ds[0], ds[150], ds[290]}
	require.Equal(t, backend.NackResult{Requeued: 3}, e.Nack("t", "g", "c", 0,
		backend.NackItem{ID: spread[0].ID, Attempt: 1}, backend.NackItem{ID: spread[1].ID, Attempt: 1},
		backend.NackItem{ID: spread[2].ID, Attempt: 1}))
	require.Equal(t, counts{Ready: 3, Pending: 292}, e.counts("t", "g"))
}

// Due retries of different attempts are claimed together (one XCLAIM per attempt count).
func TestClaimTakesRetriesOfDifferentAttemptsTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "a", "b", "c")
	nack := func(d backend.Delivery) {
		e.Nack("t", "g", "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt})
	}
	ds := e.Claim("t", "g", "c", 3)
	nack(ds[0])
	nack(ds[1])
	nack(e.Claim("t", "g", "c", 1)[0]) // a again: its attempt 2
	got := map[string]int{}
	for _, d := range e.Claim("t", "g", "c", 3) {
		got[d.ID] = d.Attempt
	}
	require.Equal(t, map[string]int{published[0]: 3, published[1]: 2}, got, "both retries, c is held")
	require.Equal(t, map[string]pel{published[0]: {"c", 3}, published[1]: {"c", 2}, published[2]: {"c", 1}}, e.pel("t", "g"))
	require.Empty(t, e.retry("t", "g"))
}

// NextExpiry: the earliest lease a holder may hold after the call (its holder's lease less
// its idle time, for the holders the call read); 1ms when the call stopped at its Count; zero
// with no holder left.
func TestReclaimReportsTheNextLeaseExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", "a", "b", "c")
	quick := e.ClaimLease("t", "g", "quick", 1, time.Minute)
	held := e.ClaimLease("t", "g", "slow", 1, time.Hour)
	res := e.ReclaimLease("t", "g", 0, time.Hour)
	require.Equal(t, backend.ReclaimResult{}, withoutExpiry(res))
	requireExpiryNear(t, time.Minute, res, "quick's lease expires first")

	// A minute on, as far as the PEL can tell: quick's entry idle for its whole lease.
	require.NoError(t, e.C.Do(e.Ctx, "XCLAIM", e.tk("t").stream, "g", "quick", 0, quick[0].ID,
		"IDLE", time.Minute.Milliseconds(), "JUSTID").Err())
	e.overdue("t", "g", "quick")
	res = e.ReclaimLease("t", "g", 0, time.Hour)
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1}, withoutExpiry(res))
	requireExpiryNear(t, time.Hour, res, "slow's lease is left")

	e.Ack("t", "g", "slow", held...)
	res = e.ReclaimLease("t", "g", 0, time.Hour)
	require.Equal(t, backend.ReclaimResult{}, withoutExpiry(res), "only parked entries: nothing to expire")
	requireExpiryNear(t, time.Hour, res, "slow stays a holder until a call reads it empty, when its lease would end")
	e.overdue("t", "g", "slow")
	require.Equal(t, backend.ReclaimResult{}, e.ReclaimLease("t", "g", 0, time.Hour), "read empty: no holder left")

	// Two expired, one handled per call: the next is due at once.
	e.ClaimLease("t", "g", "quick", 2, 10*time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g", OrphanLease: time.Hour, Count: 1})
	require.NoError(t, err)
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1, NextExpiry: time.Millisecond}, res)
}

// A consumer holding more than reclaimWindow entries, but no more than one call reads, has
// them all read by one call: every expired one found, and the next expiry known.
func TestReclaimOfAConsumerHoldingMoreThanTheWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	n := reclaimWindow + 50
	e.Publish("t", payloads("x", n)...)
	e.ClaimLease("t", "g", "many", n, 20*time.Millisecond)
	e.Publish("t", "y")
	e.ClaimLease("t", "g", "one", 1, time.Hour)
	time.Sleep(40 * time.Millisecond)
	res := e.ReclaimLease("t", "g", 0, time.Hour)
	require.Equal(t, backend.ReclaimResult{Reclaimed: n}, withoutExpiry(res))
	requireExpiryNear(t, time.Hour, res, "one's lease is left")
	require.Equal(t, counts{Ready: int64(n), Pending: 1}, e.counts("t", "g"))

	held := e.ClaimLease("t", "g", "many", n, time.Hour)
	require.Len(t, held, n)
	res = e.ReclaimLease("t", "g", 0, time.Hour)
	require.Equal(t, backend.ReclaimResult{}, withoutExpiry(res))
	requireExpiryNear(t, time.Hour, res, "")
}

// A consumer holding more than one call reads is walked, a part per call: a call with Count 1
// reads max(reclaimWindow, 1) of its entries, finds the expired ones among them and goes on
// after them in the next call, so that every expired entry is found within one walk and no
// call reads the consumer's whole PEL.
func TestReclaimWalksALargeHolderAPartPerCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	n := 3*reclaimWindow + 50
	e.Publish("t", payloads("x", n)...)
	held := e.ClaimLease("t", "g", "big", n, time.Hour)
	require.Len(t, held, n)
	var expired []string
	for _, i := range []int{10, reclaimWindow + 20, 2*reclaimWindow + 30, 3*reclaimWindow + 40} {
		expired = append(expired, held[i].ID)
		// Idle for two hours, still big's, its count kept: expired under big's 1h lease.
		require.NoError(t, e.C.Do(e.Ctx, "XCLAIM", k.topic.stream, "g", "big", 0, held[i].ID,
			"IDLE", 2*time.Hour.Milliseconds(), "JUSTID").Err())
	}
	e.overdue("t", "g", "big")
	reclaim := func() backend.ReclaimResult {
		t.Helper()
		res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g", OrphanLease: time.Hour, Count: 1})
		require.NoError(t, err)
		return res
	}

	for i := range expired {
		res := reclaim()
		require.Equal(t, backend.ReclaimResult{Reclaimed: 1, NextExpiry: time.Millisecond}, res,
			"call %d: the expired entry of its part; found one, it asks to go on at once", i)
		require.ElementsMatch(t, expired[:i+1], keysOf(e.retry("t", "g")), "call %d", i)
		if i < 3 {
			require.Equal(t, map[string]string{"big": held[(i+1)*reclaimWindow-1].ID}, e.walks("t", "g"),
				"call %d read reclaimWindow entries, and the next goes on after them", i)
		} else {
			require.Empty(t, e.walks("t", "g"), "the last part reached the end: the next call starts over")
		}
	}
	res := reclaim()
	require.Equal(t, backend.ReclaimResult{}, withoutExpiry(res), "the walk starts over and finds no more")
	requireExpiryNear(t, time.Hour, res, "")
	require.Equal(t, map[string]string{"big": held[reclaimWindow].ID}, e.walks("t", "g"),
		"the first reclaimWindow entries still big's")
	require.Len(t, e.pel("t", "g"), n, "nothing lost: parked or still big's")
	require.Equal(t, counts{Ready: 4, Pending: int64(n - 4)}, e.counts("t", "g"))
}

// A dead consumer holding more than one call reads gets all its expired entries back: each
// call handles at most Count of them and reports more while it finds some, so the reclaim
// loop calls again at once until none is left.
func TestReclaimRecoversEveryEntryOfADeadLargeHolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	n := 3*reclaimWindow + 50
	e.Publish("t", payloads("x", n)...)
	require.Len(t, e.ClaimLease("t", "g", "dead", n, 20*time.Millisecond), n)
	time.Sleep(40 * time.Millisecond)

	total, calls := 0, 0
	for {
		res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g", OrphanLease: time.Hour, Count: reclaimWindow})
		require.NoError(t, err)
		require.LessOrEqual(t, res.Reclaimed, reclaimWindow)
		total += res.Reclaimed
		calls++
		require.Less(t, calls, 20, "the walk should end")
		if res.NextExpiry != time.Millisecond {
			require.Zero(t, res.NextExpiry, "nothing leased is left")
			break
		}
	}
	require.Equal(t, n, total)
	require.Equal(t, counts{Ready: int64(n)}, e.counts("t", "g"))
}

func keysOf(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
