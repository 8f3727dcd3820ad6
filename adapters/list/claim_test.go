package list

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

func TestBlockedClaimIsWokenByAPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	const block = 20 * time.Second
	done := e.blockedClaim(&backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})

	published := time.Now()
	ids := e.Publish("t", "wake", "more")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{"wake", "more"}, adaptertest.Payloads(r.ds), "register.lua claims the rest of the batch")
	require.Less(t, r.at.Sub(published), block/2, "woken by the publish, not by the end of Block")
	t.Logf("pickup after publish: %v", r.at.Sub(published))

	k := e.gk("t", "g")
	require.Equal(t, map[string]string{ids[0]: "c", ids[1]: "c"}, e.holders(k))
	require.Equal(t, ids, e.ZMembers(k.pending), "pending holds the ids")
	require.False(t, e.Exists(k.processing), "register.lua took the BLMOVEd entry out of processing")
	require.Equal(t, int64(2), e.Stats("t", "g").Counters.Claimed)
}

// An ack of the oldest of many deliveries in flight finds nothing to scan in processing:
// non-blocking claims go straight to pending, and register.lua takes the entry a blocking
// claim moved out of processing again, so processing stays empty however many are in flight.
func TestProcessingStaysEmptyWithManyInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	const n = 1000
	payloads := make([]string, n)
	for i := range payloads {
		payloads[i] = "m" + strconv.Itoa(i)
	}
	ids := e.Publish("t", payloads...)
	require.Equal(t, adaptertest.IDsFrom(t, ids[0], n), ids)

	var inFlight []backend.Delivery
	for len(inFlight) < n {
		ds := e.Claim("t", "g", "c", 300)
		require.NotEmpty(t, ds)
		inFlight = append(inFlight, ds...)
		require.False(t, e.Exists(k.processing), "a claim without blocking goes straight to pending")
	}
	require.Equal(t, ids[0], inFlight[0].ID)
	require.Equal(t, int64(n), e.C.ZCard(e.Ctx, k.pending).Val())
	require.False(t, e.Exists(k.ready))

	done := e.blockedClaim(&backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 20 * time.Second})
	e.Publish("t", "last")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{adaptertest.IDAfter(t, ids[0], n)}, adaptertest.IDs(r.ds))
	require.False(t, e.Exists(k.processing), "register.lua leaves processing empty")
	require.Equal(t, int64(n+1), e.C.ZCard(e.Ctx, k.pending).Val())
	require.Equal(t, int64(n+1), e.Stats("t", "g").Pending)

	require.Equal(t, backend.AckResult{Acked: 1}, e.Ack("t", "g", "c", inFlight[0]), "the oldest")
	require.False(t, e.Exists(k.processing))
	require.Equal(t, int64(n), e.C.ZCard(e.Ctx, k.pending).Val())
	_, err := e.C.ZScore(e.Ctx, k.pending, inFlight[0].ID).Result()
	require.ErrorIs(t, err, redis.Nil, "the oldest left pending")
	require.NotContains(t, e.holders(k), inFlight[0].ID)

	require.Equal(t, backend.AckResult{Acked: n}, e.Ack("t", "g", "c", append(inFlight[1:], r.ds...)...))
	require.Equal(t, []string{"g:g:counters", "meta", "registry"}, e.Keys("t"))
}

func TestClaimReturnsNothingWhenBlockEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 20 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	require.Equal(t, []string{"meta", "registry"}, e.Keys("t"), "a claim writes nothing")
}

func TestClaimReturnsWhenTheContextIsCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ctx, cancel := context.WithTimeout(e.Ctx, 50*time.Millisecond)
	defer cancel()
	ds, err := e.b.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: time.Hour})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, ds)
}

func TestBlockIsBoundedBelowTheClientReadTimeout(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr(), ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	b, err := New(c, Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	require.Equal(t, 150*time.Millisecond, b.maxBlock)
	require.NoError(t, b.EnsureGroup(context.Background(), &backend.EnsureGroupParams{Topic: "t", Group: "g"}))

	// A claim blocking longer than the read timeout loops in bounded BLMOVEs, without errors.
	ds, err := b.Claim(context.Background(), &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 500 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)

	unbounded := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr(), ReadTimeout: -1})
	t.Cleanup(func() { _ = unbounded.Close() })
	b, err = New(unbounded, Options{})
	require.NoError(t, err)
	require.Zero(t, b.maxBlock)
}

func TestClaimRejectsANonPositiveLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
}

// register.lua sent again after its reply was lost (a timeout, a broken connection: register
// sends it again) returns the entry BLMOVE moved as the first call leased it, rather than
// nothing, which would leave it leased to a consumer that never got it for a whole Lease.
func TestRegisterSentAgainReturnsTheSameDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "x")
	k := e.gk("t", "g")
	entry, err := e.C.LMove(e.Ctx, k.ready, k.processing, "RIGHT", "LEFT").Result()
	require.NoError(t, err)
	p := &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute}
	first, err := e.b.registerOnce(e.Ctx, p, 1, entry)
	require.NoError(t, err)
	again, err := e.b.registerOnce(e.Ctx, p, 1, entry)
	require.NoError(t, err)
	require.Len(t, again.Deliveries, 1)
	require.Equal(t, first.Deliveries, again.Deliveries)
	require.Equal(t, ids, []string{again.Deliveries[0].ID})
	require.Equal(t, map[string]string{ids[0]: "c"}, e.holders(k))
	other, err := e.b.registerOnce(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "d", Count: 1, Lease: time.Minute}, 1, entry)
	require.NoError(t, err)
	require.Empty(t, other.Deliveries, "another consumer's lease is not returned")
}
