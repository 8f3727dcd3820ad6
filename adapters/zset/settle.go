package zset

import (
	"context"

	"github.com/relq/relq/pubsub"
)

// Nack modes of nack.lua.
const (
	modeRetry      = 0
	modeDeadLetter = 1
	modeRelease    = 2
)

// Ack runs ack.lua: each pending item loses its lease, holder and attempt count, and drops its
// reference to the body (deleted with the last group's). Items not pending, or pending under
// another attempt or consumer, count as stale.
func (b *Backend) Ack(ctx context.Context, p *pubsub.AckParams) (pubsub.AckResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return pubsub.AckResult{}, err
	}
	if len(p.Items) == 0 {
		return pubsub.AckResult{}, nil
	}
	k := b.groupKeys(p.Topic, p.Group)
	n, err := toInts(ackScript.Run(ctx, b.client, k.ackKeys(), heldArgs([]any{p.Consumer}, p.Items)...).Slice())
	if err != nil {
		return pubsub.AckResult{}, err
	}
	return pubsub.AckResult{Acked: int(n[0]), Stale: int(n[1])}, nil
}

// Nack runs nack.lua. Fenced on (consumer, attempt). A delayed retry is re-scored to Redis now
// + its delay; an immediate retry or a release is due at once with the due time it had when
// claimed, so it keeps its place in line (the front, for one consumer); an item marked
// DeadLetter or at p.MaxDeliveries goes to the dead-letter store. A release also takes back
// the attempt it was claimed with.
func (b *Backend) Nack(ctx context.Context, p *pubsub.NackParams) (pubsub.NackResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return pubsub.NackResult{}, err
	}
	if len(p.Items) == 0 {
		return pubsub.NackResult{}, nil
	}
	args := make([]any, 0, 2+5*len(p.Items))
	args = append(args, p.Consumer, max(p.MaxDeliveries, 0))
	for _, it := range p.Items {
		mode := modeRetry
		switch {
		case it.DeadLetter:
			mode = modeDeadLetter
		case it.Release:
			mode = modeRelease
		}
		args = append(args, it.ID, it.Attempt, ms(it.Delay), mode, it.Reason)
	}
	k := b.groupKeys(p.Topic, p.Group)
	n, err := toInts(nackScript.Run(ctx, b.client, k.settleKeys(), args...).Slice())
	if err != nil {
		return pubsub.NackResult{}, err
	}
	return pubsub.NackResult{Requeued: int(n[0]), DeadLettered: int(n[1]), Stale: int(n[2])}, nil
}

// Extend runs extend.lua: the held items' deadlines move to Redis now + p.Lease; the IDs the
// consumer no longer holds are returned.
func (b *Backend) Extend(ctx context.Context, p *pubsub.ExtendParams) ([]string, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return nil, err
	}
	if p.Lease <= 0 {
		return nil, &pubsub.ConfigError{Field: "ExtendParams.Lease", Reason: "must be positive"}
	}
	if len(p.Items) == 0 {
		return nil, nil
	}
	k := b.groupKeys(p.Topic, p.Group)
	res, err := extendScript.Run(ctx, b.client, k.extendKeys(), heldArgs([]any{p.Consumer, ms(p.Lease)}, p.Items)...).StringSlice()
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, nil
	}
	return res, nil
}

// Reclaim runs reclaim.lua: up to p.Count expired leases (Options.BatchSize if zero), earliest
// deadline first, go back to ready due now (behind what is already due), or to the
// dead-letter store at p.MaxDeliveries. There are never orphans to lease (a claim takes and
// leases in one script) nor delayed messages to promote (they wait in the ready ZSET), so
// ReclaimResult.Orphans and Promoted are always zero and p.OrphanLease is unused.
func (b *Backend) Reclaim(ctx context.Context, p *pubsub.ReclaimParams) (pubsub.ReclaimResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return pubsub.ReclaimResult{}, err
	}
	count := p.Count
	if count <= 0 {
		count = b.opts.BatchSize
	}
	k := b.groupKeys(p.Topic, p.Group)
	n, err := toInts(reclaimScript.Run(ctx, b.client, k.settleKeys(), max(p.MaxDeliveries, 0), count).Slice())
	if err != nil {
		return pubsub.ReclaimResult{}, err
	}
	return pubsub.ReclaimResult{Reclaimed: int(n[0]), DeadLettered: int(n[1])}, nil
}
