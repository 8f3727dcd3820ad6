package list

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// Ack runs ack.lua: each pending item leaves processing, loses its lease and attempt count,
// and drops its reference to the body (deleted with the last group's). Items not pending, or
// pending under another attempt or consumer, count as stale.
func (b *Backend) Ack(ctx context.Context, p *pubsub.AckParams) (pubsub.AckResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return pubsub.AckResult{}, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Ack(ctx, b.client, ackScript, k.ackKeys(), []any{p.Consumer}, p.Items)
}

// Nack runs nack.lua. Fenced on (consumer, attempt); an immediate retry or a release goes to
// the consume end of ready, a delayed retry to the group's delayed ZSET, and an item marked
// DeadLetter or at p.MaxDeliveries to the dead-letter store. A release also takes back the
// attempt it was claimed with.
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

// Reclaim runs reclaim.lua: expired leases go back to ready (or to the dead-letter store at
// p.MaxDeliveries), due delayed messages are promoted, and processing entries without a lease
// get an orphan lease of p.OrphanLease (pubsub.LeaseDefault if zero). Each step handles at most p.Count ids.
func (b *Backend) Reclaim(ctx context.Context, p *pubsub.ReclaimParams) (pubsub.ReclaimResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return pubsub.ReclaimResult{}, err
	}
	orphanLease := p.OrphanLease
	if orphanLease <= 0 {
		orphanLease = pubsub.LeaseDefault
	}
	count := p.Count
	if count <= 0 {
		count = b.opts.BatchSize
	}
	k := b.groupKeys(p.Topic, p.Group)
	n, err := backendkit.Ints(reclaimScript.Run(ctx, b.client, k.settleKeys(),
		max(p.MaxDeliveries, 0), backendkit.Millis(orphanLease), count).Slice())
	if err != nil {
		return pubsub.ReclaimResult{}, err
	}
	return pubsub.ReclaimResult{Reclaimed: int(n[0]), DeadLettered: int(n[1]), Orphans: int(n[2]), Promoted: int(n[3])}, nil
}
