package list

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/pubsub"
)

// registerTimeout bounds register.lua after a BLMOVE. It runs even when the caller's context
// was cancelled meanwhile: the id is already in processing, and registering it (so the caller
// can release it) beats leaving an orphan that waits for OrphanLease.
const registerTimeout = 5 * time.Second

// Claim runs claim.lua (promote due delayed messages, then claim up to p.Count). With nothing
// ready and p.Block > 0 it blocks in BLMOVE ready -> processing, woken by the next publish, for
// at most the time left of p.Block, the time until the earliest delayed message is due, and
// the client's read timeout; then register.lua leases the moved entry and claims the rest of
// p.Count from ready, in the one round trip after the wake-up. A consumer that dies between the
// two leaves an orphan for Reclaim. When the BLMOVE times out at the end of p.Block, Claim
// returns nothing without running claim.lua again; the consumer's next Claims go straight to
// BLMOVE until engine.IdleProbe passes or a delayed message it knows of is due, so an idle
// consumer runs claim.lua once per probe, not once per Block.
func (b *Backend) Claim(ctx context.Context, p *pubsub.ClaimParams) ([]pubsub.Delivery, error) {
	if p.Lease <= 0 {
		if err := b.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
			return nil, err
		}
		return nil, &pubsub.ConfigError{Field: "ClaimParams.Lease", Reason: "must be positive"}
	}
	count := min(max(p.Count, 1), b.BatchSize())
	end := time.Now().Add(p.Block)
	skip, _, skipping := b.idle.Skip(p.Topic, p.Group, p.Consumer)
	for {
		wait := time.Until(end)
		if skipping && p.Block > 0 {
			// Idle a moment ago: BLMOVE sees whatever becomes ready meanwhile.
			skipping = false
			wait = min(wait, skip)
		} else {
			c, err := b.ClaimOnce(ctx, p, p.Block+engine.IdleProbe)
			if err != nil {
				return nil, err
			}
			if len(c.Deliveries) > 0 || p.Block <= 0 {
				b.idle.Busy(p.Topic, p.Group, p.Consumer)
				return c.Deliveries, nil
			}
			b.idle.Found(p.Topic, p.Group, p.Consumer, c.Wait)
			if c.Wait >= 0 {
				wait = min(wait, c.Wait)
			}
		}
		if wait <= 0 || ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if b.maxBlock > 0 {
			wait = min(wait, b.maxBlock)
		}
		entry, err := b.blmove(ctx, p, max(wait, time.Millisecond))
		if errors.Is(err, redis.Nil) {
			if !time.Now().Before(end) {
				// Block is over and nothing came: return without another claim.lua; the
				// caller's next Claim starts with one, or skips it while IdleProbe lasts.
				return nil, nil
			}
			continue // timed out early (a due time, maxBlock, the probe): claim again, which promotes what became due
		}
		if err != nil {
			return nil, err
		}
		b.idle.Busy(p.Topic, p.Group, p.Consumer)
		got, err := b.register(ctx, p, count, entry)
		if err != nil || len(got) > 0 {
			return got, err
		}
		// The entry was someone else's by the time we registered: wait for the next one.
	}
}

// register runs register.lua for the entry BLMOVE moved, claiming up to count in all.
func (b *Backend) register(ctx context.Context, p *pubsub.ClaimParams, count int, entry string) ([]pubsub.Delivery, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registerTimeout)
	defer cancel()
	c, err := b.RunClaim(ctx, "register", p, p.Consumer, count, backendkit.Millis(p.Lease), entry)
	return c.Deliveries, err
}

// blmove runs BLMOVE ready processing RIGHT LEFT with a millisecond timeout. go-redis's typed
// BLMove rounds timeouts up to whole seconds, which would stretch every idle claim to 1s.
func (b *Backend) blmove(ctx context.Context, p *pubsub.ClaimParams, wait time.Duration) (string, error) {
	k := b.keys(p.Topic, p.Group)
	secs := strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)
	cmd := redis.NewStringCmd(ctx, "blmove", k.Store("ready"), k.Store("processing"), "RIGHT", "LEFT", secs)
	_ = b.Client().Process(ctx, cmd)
	return cmd.Result()
}
