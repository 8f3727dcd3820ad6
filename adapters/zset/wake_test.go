package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// A publish pushes a wake-up token only while a consumer of the group may be asleep: to a
// group whose consumers keep finding work (they never block), or whose last Block is over, it
// pushes none.
func TestPublishToBusyConsumersPushesNoWakeToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")

	e.Publish("t", "a")
	require.False(t, e.Exists(k.wake), "no consumer has claimed yet: nobody to wake")
	held := e.Claim("t", "g", "c", 10) // busy: claims without blocking, and finds work
	require.Equal(t, []string{"a"}, adaptertest.Payloads(held))
	e.Publish("t", "b", "c")
	require.False(t, e.Exists(k.wake), "the consumer never blocked: no token")
	require.Zero(t, e.wakeMark(k, "g"), "a claim that does not block marks nobody asleep")
	held = append(held, e.Claim("t", "g", "c", 10)...)
	require.Equal(t, []string{"a", "b", "c"}, adaptertest.Payloads(held))
	require.Equal(t, backend.AckResult{Acked: 3}, e.Ack("t", "g", "c", held...))

	// A consumer whose Block ended (it went back to work, or away) is not asleep either.
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10,
		Lease: time.Minute, Block: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	mark := e.wakeMark(k, "g")
	require.NotZero(t, mark, "a claim that blocks marks the group asleep until its Block (and the idle probe) ends")
	require.Eventually(t, func() bool { return e.redisNow() > float64(mark) }, 5*time.Second, time.Millisecond)
	e.Publish("t", "d")
	require.False(t, e.Exists(k.wake), "its Block is over: no token")
	require.Equal(t, []string{"d"}, adaptertest.Payloads(e.Claim("t", "g", "c", 10)), "the next claim finds it anyway")
	require.False(t, e.Exists(k.wake))
}

// A publish wakes a consumer blocked in Claim at once, long before its Block ends, in every
// group it routes to whose consumers sleep, and the tokens it pushed are taken; a group of the
// same topic whose consumers are not asleep gets the message but no token.
func TestPublishWakesAConsumerBlockedInClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, _ := e.counted(Options{})
	sleepy := []string{"sleepy", "dozy"}
	for _, g := range append([]string{"busy"}, sleepy...) {
		e.EnsureGroup("t", g)
	}
	first := e.Publish("t", "first")
	for _, g := range append([]string{"busy"}, sleepy...) {
		require.Equal(t, first, adaptertest.IDs(e.Claim("t", g, "c", 10)), "%s: busy, claims without blocking", g)
	}

	const block = 20 * time.Second
	var dones []<-chan claimed
	for _, g := range sleepy {
		dones = append(dones, claimAsync(e.Ctx, b, backend.ClaimParams{Topic: "t", Group: g, Consumer: "c", Count: 10, Lease: time.Minute, Block: block}))
	}
	e.blocked(len(sleepy))

	published := time.Now()
	id := e.Publish("t", "x")[0]
	for i, done := range dones {
		var r claimed
		select {
		case r = <-done:
		case <-time.After(block / 2):
			require.FailNow(t, "the blocked claim was not woken by the publish", "group %s", sleepy[i])
		}
		require.NoError(t, r.err)
		require.Equal(t, []string{id}, adaptertest.IDs(r.ds), sleepy[i])
		require.Less(t, r.at.Sub(published), block/4, "%s: woken by the publish, long before Block ends", sleepy[i])
		k := e.gk("t", sleepy[i])
		require.False(t, e.Exists(k.wake), "%s: the token was taken", sleepy[i])
		require.False(t, e.Exists(k.ownWake("c")), "%s: nothing scheduled, so no timer's token either", sleepy[i])
	}

	require.False(t, e.Exists(e.gk("t", "busy").wake), "busy's consumer was not asleep: no token")
	require.Equal(t, []string{id}, adaptertest.IDs(e.Claim("t", "busy", "c", 10)), "yet the message is there")
}

// A consumer that claims without blocking (Block 0) never waits for a wake-up token, so even
// when it finds nothing it marks nobody asleep, and a publish pushes no token.
func TestNonBlockingClaimMarksNobodyAsleep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	require.Empty(t, e.Claim("t", "g", "c", 10))
	require.Zero(t, e.wakeMark(k, "g"), "a claim that does not block marks nobody asleep")
	e.Publish("t", "x")
	require.False(t, e.Exists(k.wake), "the consumer never blocked: no token")
}
