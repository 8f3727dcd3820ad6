package zset

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// Ack runs ack.lua: each pending item loses its lease, holder and attempt count, and drops its
// reference to the body (deleted with the last group's). Items not pending, or pending under
// another attempt or consumer, count as stale.
func (b *Backend) Ack(ctx context.Context, p *pubsub.AckParams) (pubsub.AckResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return pubsub.AckResult{}, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Ack(ctx, b.client, ackScript, k.ackKeys(), []any{p.Consumer}, p.Items)
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
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Nack(ctx, b.client, nackScript, k.settleKeys(), []any{p.Consumer, max(p.MaxDeliveries, 0)}, p.Items)
}

// Extend runs extend.lua: the held items' deadlines move to Redis now + p.Lease; the IDs the
// consumer no longer holds are returned.
func (b *Backend) Extend(ctx context.Context, p *pubsub.ExtendParams) ([]string, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return nil, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Extend(ctx, b.client, extendScript, k.extendKeys(), []any{p.Consumer}, p.Lease, p.Items)
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
	n, err := backendkit.Ints(reclaimScript.Run(ctx, b.client, k.settleKeys(), max(p.MaxDeliveries, 0), count).Slice())
	if err != nil {
		return pubsub.ReclaimResult{}, err
	}
	return pubsub.ReclaimResult{Reclaimed: int(n[0]), DeadLettered: int(n[1])}, nil
}
