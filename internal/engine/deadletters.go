package engine

import (
	"context"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// DeadLetters reads one page of the group's dead letters, oldest first, in one read-only
// script (O(log N + page)); a page holds at most BatchSize. An entry that cannot be decoded comes back with its bytes in Raw.
func (e *Engine) DeadLetters(ctx context.Context, p *backend.DeadLettersParams) ([]backend.DeadLetter, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return nil, err
	}
	flat, err := e.run(ctx, "deadletters", e.Keys(p.Topic, p.Group).all,
		max(p.Offset, 0), min(backendkit.DeadLettersCount(p.Count), e.store.BatchSize)).Slice()
	if err != nil {
		return nil, err
	}
	return backendkit.DecodeDeadLetters(p.Topic, p.Group, flat), nil
}

// RequeueDeadLetters moves the given dead letters (or all, with p.All) back to ready with
// attempts reset, in requeue.lua calls of at most BatchSize ids each. Each call is atomic; a
// large requeue is several. IDs that are not dead letters are skipped. Params that
// p.Validate refuses requeue nothing.
func (e *Engine) RequeueDeadLetters(ctx context.Context, p *backend.RequeueParams) (int, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return 0, err
	}
	return backendkit.Requeue(ctx, e.client, e.scripts["requeue"], e.Keys(p.Topic, p.Group).all, e.store.BatchSize, p)
}

// PurgeDeadLetters deletes the group's dead letters given by p.IDs, or with p.All the oldest
// (at most p.Limit when it is positive), in purge.lua calls of at most BatchSize each, each
// atomic; a body goes with the last group that held it. IDs that are not dead letters are
// skipped. Params that p.Validate refuses delete nothing.
func (e *Engine) PurgeDeadLetters(ctx context.Context, p *backend.PurgeParams) (int, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return 0, err
	}
	return backendkit.Purge(ctx, e.client, e.scripts["purge"], e.Keys(p.Topic, p.Group).all, e.store.BatchSize, p)
}
