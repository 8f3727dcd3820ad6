package streams

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

// Ack runs ack.lua: XACK of every pending item, from any holder. Items not pending, or pending
// under another consumer or attempt, count as stale. With DeleteOnAck, entries that every
// group has acknowledged are deleted in the same script.
func (b *Backend) Ack(ctx context.Context, p *pubsub.AckParams) (pubsub.AckResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return pubsub.AckResult{}, err
	}
	if len(p.Items) == 0 {
		return pubsub.AckResult{}, nil
	}
	k := b.groupKeys(p.Topic, p.Group)
	n, err := toInts(ackScript.Run(ctx, b.client, k.ackKeys(),
		heldArgs([]any{p.Group, p.Consumer, b.deleteOnAck()}, p.Items)...).Slice())
	if err != nil {
		return pubsub.AckResult{}, err
	}
	return pubsub.AckResult{Acked: int(n[0]), Stale: int(n[1])}, nil
}

// Nack runs nack.lua. Fenced on (consumer, attempt), read from the PEL. A retry keeps the
// entry in the PEL under the parking consumer, due after its delay; a release does too, due
// at once and with its attempt taken back; an item marked DeadLetter or at p.MaxDeliveries
// moves to the group's dead-letter stream, atomically with its XACK.
func (b *Backend) Nack(ctx context.Context, p *pubsub.NackParams) (pubsub.NackResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return pubsub.NackResult{}, err
	}
	if len(p.Items) == 0 {
		return pubsub.NackResult{}, nil
	}
	args := make([]any, 0, 5+5*len(p.Items))
	args = append(args, p.Group, p.Consumer, ParkedConsumer, max(p.MaxDeliveries, 0), p.Topic)
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
	n, err := toInts(nackScript.Run(ctx, b.client, k.nackKeys(), args...).Slice())
	if err != nil {
		return pubsub.NackResult{}, err
	}
	return pubsub.NackResult{Requeued: int(n[0]), DeadLettered: int(n[1]), Stale: int(n[2])}, nil
}

// Extend runs extend.lua: the held items' PEL idle time is reset (XCLAIM to the holder,
// JUSTID), and p.Lease becomes the consumer's lease. The IDs the consumer no longer holds are
// returned.
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
	res, err := extendScript.Run(ctx, b.client, k.extendKeys(),
		heldArgs([]any{p.Group, p.Consumer, ms(p.Lease)}, p.Items)...).StringSlice()
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, nil
	}
	return res, nil
}

// Reclaim runs reclaim.lua: the entries whose PEL idle time reached their holder's lease (the
// one its last Claim or Extend gave; p.OrphanLease for a consumer relq never recorded, such as
// a watermill-redisstream subscriber of the same group, pubsub.LeaseDefault if zero) are
// parked for a retry due at once, without counting an attempt, or dead-lettered at
// p.MaxDeliveries. At most p.Count are handled (Options.BatchSize if zero). It also removes
// consumers idle for Options.ConsumerIdleTimeout with nothing pending.
//
// Delayed messages need no promotion here: a due retry is claimable as it is, so Promoted and
// Orphans are always zero.
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
	idle := int64(0)
	if b.opts.ConsumerIdleTimeout > 0 {
		idle = ms(b.opts.ConsumerIdleTimeout)
	}
	k := b.groupKeys(p.Topic, p.Group)
	n, err := toInts(reclaimScript.Run(ctx, b.client, k.reclaimKeys(),
		p.Group, ParkedConsumer, max(p.MaxDeliveries, 0), ms(orphanLease), count, p.Topic, idle).Slice())
	if err != nil {
		return pubsub.ReclaimResult{}, err
	}
	return pubsub.ReclaimResult{Reclaimed: int(n[0]), DeadLettered: int(n[1])}, nil
}
