package list

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

// A full Redis (maxmemory reached, noeviction) refuses BLMOVE, which may create a key. A
// blocking Claim with nothing ready then runs claim.lua (RPOP, which Redis allows) every
// fullPoll instead of failing: it picks up what a nack makes ready meanwhile, and it does not
// spin.
func TestBlockedClaimOnAFullRedis(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory-policy", "noeviction"}})
	c := server.Client(t)
	b, err := New(c, Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "t", Group: "g"}))
	_, err = b.Publish(ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{
		{Envelope: backend.Envelope{UUID: "u1", Payload: []byte("x")}}}})
	require.NoError(t, err)
	held, err := b.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c1", Count: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, held, 1)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())

	// Nothing ready: the Claim waits out its Block, running claim.lua at most once per
	// fullPoll, and returns nothing.
	const block = time.Second
	before := commandCalls(t, c)
	ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c2", Count: 1, Lease: time.Minute, Block: block})
	require.NoError(t, err)
	require.Empty(t, ds)
	after := commandCalls(t, c)
	scripts := after["evalsha"] + after["eval"] - before["evalsha"] - before["eval"]
	require.Positive(t, after["blmove"]-before["blmove"], "the claim tried BLMOVE first")
	require.LessOrEqual(t, scripts, int64(block/fullPoll)+2, "claim.lua runs once per fullPoll at most")
	t.Logf("a %v Block on a full Redis: %d claim.lua calls, %d BLMOVEs refused", block, scripts, after["blmove"]-before["blmove"])

	// A nack on the full Redis makes the message ready while c2 waits; c2 claims it.
	type claimed struct {
		ds  []backend.Delivery
		err error
	}
	done := make(chan claimed, 1)
	go func() {
		ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c2", Count: 1, Lease: time.Minute, Block: time.Minute})
		done <- claimed{ds, err}
	}()
	refused := commandCalls(t, c)["blmove"]
	require.Eventually(t, func() bool { return commandCalls(t, c)["blmove"] > refused }, time.Minute, 10*time.Millisecond,
		"the claim waits")
	res, err := b.Nack(ctx, &backend.NackParams{Topic: "t", Group: "g", Consumer: "c1",
		Items: []backend.NackItem{{ID: held[0].ID, Attempt: held[0].Attempt}}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Requeued)
	r := <-done
	require.NoError(t, r.err)
	got := r.ds
	require.Len(t, got, 1)
	require.Equal(t, held[0].ID, got[0].ID)
	require.Equal(t, 2, got[0].Attempt)
}

// commandCalls reads INFO commandstats: per command, the calls Redis ran or refused.
func commandCalls(t *testing.T, c *redis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	out := map[string]int64{}
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		for kv := range strings.SplitSeq(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "calls" || k == "rejected_calls" {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[name] += n
			}
		}
	}
	return out
}
