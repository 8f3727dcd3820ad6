package backendkit

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
)

// QueueAck queues Ack's one call on pipe (EVALSHA, no fallback), so that a partitioned
// topic acks its partitions on one primary in one round trip. done, once pipe ran, returns
// the result, or again when the script was not loaded on that primary (nothing was acked)
// and Ack itself must run.
func QueueAck(ctx context.Context, pipe redis.Pipeliner, script *redis.Script, keys []string, head []any, items []backend.Held) (done func() (res backend.AckResult, again bool, err error)) {
	if len(items) == 0 {
		return func() (backend.AckResult, bool, error) { return backend.AckResult{}, false, nil }
	}
	cmd := script.EvalSha(ctx, pipe, keys, HeldArgs(head, items)...)
	return func() (backend.AckResult, bool, error) {
		res, err := cmd.Slice()
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			return backend.AckResult{}, true, nil
		}
		n, err := Ints(res, err)
		if err != nil {
			return backend.AckResult{}, false, err
		}
		return backend.AckResult{Acked: int(n[0]), Stale: int(n[1])}, false, nil
	}
}
