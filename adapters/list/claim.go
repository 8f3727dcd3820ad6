package list

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// registerTimeout bounds register.lua after a BLMOVE. It runs even when the caller's context
// was cancelled meanwhile: the id is already in processing, and registering it (so the caller
// can release it) beats leaving an orphan that waits for OrphanLease.
const registerTimeout = 5 * time.Second

// Claim runs claim.lua (promote due delayed messages, then claim up to p.Count). With nothing
// ready and p.Block > 0 it blocks in BLMOVE ready -> processing, woken by the next publish, for
// at most the time left of p.Block, the time until the earliest delayed message is due, and
// the client's read timeout; then register.lua leases the moved id and claims the rest of
// p.Count from ready. A consumer that dies between the two leaves an orphan for Reclaim.
// When the BLMOVE times out at the end of p.Block, Claim returns nothing without running
// claim.lua again: the caller's next Claim starts with it.
func (b *Backend) Claim(ctx context.Context, p *pubsub.ClaimParams) ([]pubsub.Delivery, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return nil, err
	}
	if p.Lease <= 0 {
		return nil, &pubsub.ConfigError{Field: "ClaimParams.Lease", Reason: "must be positive"}
	}
	count := max(p.Count, 1)
	k := b.groupKeys(p.Topic, p.Group)
	end := time.Now().Add(p.Block)
	for {
		res, err := claimScript.Run(ctx, b.client, k.claimKeys(),
			p.Consumer, count, backendkit.Millis(p.Lease), b.opts.BatchSize).Slice()
		if err != nil {
			return nil, err
		}
		if len(res) > 1 || p.Block <= 0 {
			return deliveries(p.Topic, res[1:]), nil
		}
		wait := time.Until(end)
		if wait <= 0 || ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if due := backendkit.Int(res[0]); due >= 0 {
			wait = min(wait, time.Duration(due)*time.Millisecond)
		}
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if b.maxBlock > 0 {
			wait = min(wait, b.maxBlock)
		}
		id, err := b.blmove(ctx, k, max(wait, time.Millisecond))
		if errors.Is(err, redis.Nil) {
			if !time.Now().Before(end) {
				// Block is over and nothing came: return without another claim.lua, since
				// the caller's next Claim starts with one (an idle consumer then runs one
				// script per Block, not two).
				return nil, nil
			}
			continue // timed out early (a due time, maxBlock): claim again, which promotes what became due
		}
		if err != nil {
			return nil, err
		}
		got, err := b.register(ctx, k, p, count, id)
		if err != nil || len(got) > 0 {
			return got, err
		}
		// The id was someone else's by the time we registered: wait for the next one.
	}
}

// register runs register.lua for the id BLMOVE moved, claiming up to count in all.
func (b *Backend) register(ctx context.Context, k groupKeys, p *pubsub.ClaimParams, count int, id string) ([]pubsub.Delivery, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registerTimeout)
	defer cancel()
	res, err := registerScript.Run(ctx, b.client, k.registerKeys(), p.Consumer, count, backendkit.Millis(p.Lease), id).Slice()
	if err != nil {
		return nil, err
	}
	return deliveries(p.Topic, res[1:]), nil
}

// blmove runs BLMOVE ready processing RIGHT LEFT with a millisecond timeout. go-redis's typed
// BLMove rounds timeouts up to whole seconds, which would stretch every idle claim to 1s.
func (b *Backend) blmove(ctx context.Context, k groupKeys, wait time.Duration) (string, error) {
	secs := strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)
	cmd := redis.NewStringCmd(ctx, "blmove", k.ready, k.processing, "RIGHT", "LEFT", secs)
	_ = b.client.Process(ctx, cmd)
	return cmd.Result()
}

// deliveries decodes claim.lua's and register.lua's flat {id, attempt, body, ...} reply. An
// undecodable body becomes a Delivery with Err wrapping pubsub.ErrCorruptEntry, for the caller
// to dead-letter.
func deliveries(topic string, flat []any) []pubsub.Delivery {
	return backendkit.DecodeDeliveries(flat, topic, "list: delivery", backendkit.DecodeEnvelope)
}
