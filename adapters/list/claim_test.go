package list

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestBlockedClaimIsWokenByAPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A client of its own, named, to see it blocked in CLIENT LIST.
	opt, err := redis.ParseURL(redistest.Shared(t).URL())
	require.NoError(t, err)
	opt.ClientName = e.Prefix
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	b, err := New(c, Options{Prefix: e.Prefix})
	require.NoError(t, err)
	e.EnsureGroup("t", "g")

	const block = 20 * time.Second
	type result struct {
		ds  []pubsub.Delivery
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ds, err := b.Claim(e.Ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
		done <- result{ds, err, time.Now()}
	}()
	require.Eventually(t, func() bool {
		for line := range strings.Lines(e.C.ClientList(e.Ctx).Val()) {
			if strings.Contains(line, "name="+e.Prefix+" ") && strings.Contains(line, "cmd=blmove") {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "the claim should block in BLMOVE")

	published := time.Now()
	e.Publish("t", "wake", "more")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{"wake", "more"}, adaptertest.Payloads(r.ds), "register.lua claims the rest of the batch")
	require.Less(t, r.at.Sub(published), block/2, "woken by the publish, not by the end of Block")
	t.Logf("pickup after publish: %v", r.at.Sub(published))

	k := e.gk("t", "g")
	require.Equal(t, map[string]string{"1": "c", "2": "c"}, e.holders(k))
	require.Equal(t, []string{"2", "1"}, e.LRange(k.processing), "processing holds bare ids")
	require.Equal(t, int64(2), e.Stats("t", "g").Counters.Claimed)
}

func TestClaimReturnsNothingWhenBlockEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ds, err := e.b.Claim(e.Ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 20 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	require.Equal(t, []string{"groups"}, e.Keys("t"))
}

func TestClaimReturnsWhenTheContextIsCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(e.Ctx, 50*time.Millisecond)
	defer cancel()
	ds, err := e.b.Claim(ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: time.Hour})
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

	// A claim blocking longer than the read timeout loops in bounded BLMOVEs, without errors.
	ds, err := b.Claim(context.Background(), &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 500 * time.Millisecond})
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
	_, err := e.b.Claim(e.Ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1})
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)
}
