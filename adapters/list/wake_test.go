package list

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// wakeSlack absorbs the millisecond rounding between the Redis clock, which sets due times,
// and the Go clock that measures them.
const wakeSlack = 5 * time.Millisecond

// A delayed publish, from another client, wakes a consumer blocked in BLMOVE, which then
// takes the message when it is due: not at the end of its Block.
func TestDelayedPublishWakesABlockedClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	const block, delay = 20 * time.Second, 300 * time.Millisecond
	done := e.blockedClaim(&backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})

	start := time.Now()
	ids := e.PublishDelayed("t", delay, "later")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{"later"}, adaptertest.Payloads(r.ds))
	require.GreaterOrEqual(t, r.at.Sub(start), delay-wakeSlack, "not before it is due")
	require.Less(t, r.at.Sub(start), block/2, "woken for the due time, not by the end of Block")
	t.Logf("claimed %v after it was due", r.at.Sub(start)-delay)

	k := e.gk("t", "g")
	require.Equal(t, map[string]string{ids[0]: "c"}, e.holders(k))
	require.False(t, e.Exists(k.ready), "the wake-up entry is gone")
	require.False(t, e.Exists(k.processing))
	require.False(t, e.Exists(k.delayed))
}

// A nack with a delay wakes another consumer blocked in BLMOVE, which takes the retry when
// it is due.
func TestNackWithDelayWakesABlockedClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "retry")
	ds := e.Claim("t", "g", "a", 1)
	require.Len(t, ds, 1)
	const block, delay = 20 * time.Second, 300 * time.Millisecond
	done := e.blockedClaim(&backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})

	start := time.Now()
	res := e.Nack("t", "g", "a", 0, backend.NackItem{ID: ds[0].ID, Attempt: ds[0].Attempt, Delay: delay})
	require.Equal(t, 1, res.Requeued)
	r := <-done
	require.NoError(t, r.err)
	require.Len(t, r.ds, 1)
	require.Equal(t, ids[0], r.ds[0].ID)
	require.Equal(t, 2, r.ds[0].Attempt)
	require.GreaterOrEqual(t, r.at.Sub(start), delay-wakeSlack, "not before it is due")
	require.Less(t, r.at.Sub(start), block/2, "woken for the due time, not by the end of Block")
	t.Logf("claimed %v after it was due", r.at.Sub(start)-delay)
}

// A wake-up entry that no consumer took (the one that marked the group asleep stopped) is
// no message: Stats and the ready listing leave it out, and the next claim drops it. Only
// one is pushed, and only for a message due before every other.
func TestWakeEntryIsNoMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	k := e.gk("t", "g")
	// A claim that finds nothing marks the group asleep for its Block and the idle probe.
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 10 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)

	e.PublishDelayed("t", time.Hour, "late")
	require.Equal(t, []string{wakeEntry}, e.LRange(k.ready), "a delayed publish while asleep wakes a consumer")
	e.PublishDelayed("t", 2*time.Hour, "later")
	e.PublishDelayed("t", 30*time.Minute, "sooner")
	require.Equal(t, []string{wakeEntry}, e.LRange(k.ready), "one wake-up entry at most")

	s := e.Stats("t", "g")
	require.Zero(t, s.Ready)
	require.EqualValues(t, 3, s.Delayed)
	page, err := e.b.Messages(e.Ctx, &backend.MessagesParams{Topic: "t", Group: "g", State: backend.StateReady, Count: 10})
	require.NoError(t, err)
	require.Empty(t, page.Messages)

	require.Empty(t, e.Claim("t", "g", "c", 10))
	require.False(t, e.Exists(k.ready), "the claim dropped the wake-up entry")
	require.Equal(t, map[string]string{}, e.holders(k), "and leased nothing")
}

// A delayed message due after one a sleeping consumer knows of pushes no wake-up entry.
func TestLaterDelayedPublishDoesNotWake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	k := e.gk("t", "g")
	e.PublishDelayed("t", time.Hour, "first")
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 10 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	e.PublishDelayed("t", 2*time.Hour, "second")
	require.False(t, e.Exists(k.ready))
}
