package list

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// DeadLetters reads one page of the group's dead letters, oldest first, in one read-only
// script. An entry that cannot be decoded comes back with its bytes in Raw.
func (b *Backend) DeadLetters(ctx context.Context, p *pubsub.DeadLettersParams) ([]pubsub.DeadLetter, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return nil, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	flat, err := deadLettersScript.Run(ctx, b.client, k.deadLettersKeys(),
		max(p.Offset, 0), backendkit.DeadLettersCount(p.Count)).Slice()
	if err != nil {
		return nil, err
	}
	return backendkit.DecodeDeadLetters(p.Topic, p.Group, flat), nil
}

// RequeueDeadLetters moves the given dead letters (or all, with p.All) to the back of ready
// with attempts reset, in requeue.lua calls of at most Options.BatchSize ids each. Each call is
// atomic; a large requeue is several. IDs that are not dead letters are skipped.
func (b *Backend) RequeueDeadLetters(ctx context.Context, p *pubsub.RequeueParams) (int, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return 0, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Requeue(ctx, b.client, requeueScript, k.requeueKeys(), b.opts.BatchSize, p)
}

// PurgeDeadLetters deletes the group's dead letters, oldest first (at most p.Limit when it is
// positive), in purge.lua calls of at most Options.BatchSize each; a body goes with the last group that held it.
func (b *Backend) PurgeDeadLetters(ctx context.Context, p *pubsub.PurgeParams) (int, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return 0, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Purge(ctx, b.client, purgeScript, k.purgeKeys(), b.opts.BatchSize, p.Limit)
}
