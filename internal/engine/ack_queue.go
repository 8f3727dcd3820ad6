package engine

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// QueueAck queues Ack on pipe when it is one call (at most BatchSize items), so that a
// partitioned topic acks its partitions on one primary in one round trip; ok false leaves
// the batch to Ack. done, once pipe ran, returns the result, or again when Ack itself must
// run (the script was not loaded; nothing was acked).
func (e *Engine) QueueAck(ctx context.Context, pipe redis.Pipeliner, p *backend.AckParams) (done func() (backend.AckResult, bool, error), ok bool) {
	if len(p.Items) > e.store.BatchSize {
		return nil, false
	}
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return func() (backend.AckResult, bool, error) { return backend.AckResult{}, false, err }, true
	}
	return backendkit.QueueAck(ctx, pipe, e.scripts["ack"], e.Keys(p.Topic, p.Group).all, []any{p.Group, p.Consumer}, p.Items), true
}
