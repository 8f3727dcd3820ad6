package engine

import (
	"context"
	"slices"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Ack runs ack.lua in calls of at most BatchSize items: each pending item leaves pending and
// drops its reference to the body (deleted with the last group's). Items not pending, or
// pending under another attempt or consumer, count as stale; those waiting in ready or
// delayed after a reclaim or nack are completed all the same (see ack.lua).
func (e *Engine) Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return backend.AckResult{}, err
	}
	keys := e.Keys(p.Topic, p.Group).all
	var total backend.AckResult
	for items := range slices.Chunk(p.Items, e.store.BatchSize) {
		res, err := backendkit.Ack(ctx, e.client, e.scripts["ack"], keys, []any{p.Group, p.Consumer}, items)
		total.Acked += res.Acked
		total.Stale += res.Stale
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Nack runs nack.lua in calls of at most BatchSize items. Fenced on (consumer, attempt); where
// each item goes back is the store's rule.
func (e *Engine) Nack(ctx context.Context, p *backend.NackParams) (backend.NackResult, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return backend.NackResult{}, err
	}
	keys := e.Keys(p.Topic, p.Group).all
	var total backend.NackResult
	for items := range slices.Chunk(p.Items, e.store.BatchSize) {
		res, err := backendkit.Nack(ctx, e.client, e.scripts["nack"], keys, []any{p.Group, p.Consumer, max(p.MaxDeliveries, 0)}, items)
		total.Requeued += res.Requeued
		total.DeadLettered += res.DeadLettered
		total.Stale += res.Stale
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Extend runs extend.lua in calls of at most BatchSize items: the held items' deadlines move to
// Redis now + p.Lease; the IDs the consumer no longer holds are returned.
func (e *Engine) Extend(ctx context.Context, p *backend.ExtendParams) ([]string, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return nil, err
	}
	if p.Lease <= 0 {
		return nil, &backend.ConfigError{Field: "ExtendParams.Lease", Reason: "must be positive"}
	}
	keys := e.Keys(p.Topic, p.Group).all
	var lost []string
	for items := range slices.Chunk(p.Items, e.store.BatchSize) {
		l, err := backendkit.Extend(ctx, e.client, e.scripts["extend"], keys, []any{p.Consumer}, p.Lease, items)
		if err != nil {
			return lost, err
		}
		lost = append(lost, l...)
	}
	return lost, nil
}

// Reclaim runs reclaim.lua: up to p.Count expired leases (BatchSize if zero), earliest
// deadline first, go back to ready or, at p.MaxDeliveries, to the dead-letter store; then the
// store's upkeep. orphanLease is the lease of an orphan the store finds. When the script saw
// ephemeral groups of the topic whose members all expired, or deleted groups' trash, Reclaim
// deletes those groups and takes a step of freeing the trash (a group with no live
// subscriber's process is found this way by the others' reclaim loops).
func (e *Engine) Reclaim(ctx context.Context, p *backend.ReclaimParams) (backend.ReclaimResult, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return backend.ReclaimResult{}, err
	}
	orphanLease := p.OrphanLease
	if orphanLease <= 0 {
		orphanLease = backend.LeaseDefault
	}
	count := p.Count
	if count <= 0 {
		count = e.store.BatchSize
	}
	n, err := backendkit.Ints(e.run(ctx, "reclaim", e.Keys(p.Topic, p.Group).all,
		max(p.MaxDeliveries, 0), backendkit.Millis(orphanLease), count, p.Group).Slice())
	if err != nil {
		return backend.ReclaimResult{}, err
	}
	res := backend.ReclaimResult{Reclaimed: int(n[0]), DeadLettered: int(n[1]), Orphans: int(n[2]), Promoted: int(n[3])}
	setNextExpiry(&res, n[4], n[5] == 1)
	if n[6] == 1 {
		if err := e.sweepExpired(ctx, p.Topic); err != nil {
			return res, err
		}
	}
	if n[7] == 1 {
		return res, e.drainTrash(ctx, p.Topic, sweepSteps)
	}
	return res, nil
}

// setNextExpiry fills in what Reclaim learned of the group's next lease expiry: more expired
// leases are waiting (more), or the earliest lease left expires in expiryMs (-1: none).
func setNextExpiry(res *backend.ReclaimResult, expiryMs int64, more bool) {
	switch {
	case more:
		res.NextExpiry = time.Millisecond
	case expiryMs > 0:
		res.NextExpiry = time.Duration(expiryMs) * time.Millisecond
	}
}
