package backendkit

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
)

// Nack modes, as every adapter's nack.lua reads them.
const (
	modeRetry      = 0
	modeDeadLetter = 1
	modeRelease    = 2
)

// Ack runs an adapter's ack.lua with ARGV head, then each item's id and attempt; the script
// returns {acked, stale}. No items: no call.
func Ack(ctx context.Context, client redis.Scripter, script *redis.Script, keys []string, head []any, items []backend.Held) (backend.AckResult, error) {
	if len(items) == 0 {
		return backend.AckResult{}, nil
	}
	n, err := Ints(script.Run(ctx, client, keys, HeldArgs(head, items)...).Slice())
	if err != nil {
		return backend.AckResult{}, err
	}
	return backend.AckResult{Acked: int(n[0]), Stale: int(n[1])}, nil
}

// Nack runs an adapter's nack.lua with ARGV head, then each item's id, attempt, delay in ms,
// mode (0 retry, 1 dead-letter, 2 release) and reason; the script returns {requeued,
// dead_lettered, stale}. No items: no call.
func Nack(ctx context.Context, client redis.Scripter, script *redis.Script, keys []string, head []any, items []backend.NackItem) (backend.NackResult, error) {
	if len(items) == 0 {
		return backend.NackResult{}, nil
	}
	args := append(make([]any, 0, len(head)+5*len(items)), head...)
	for _, it := range items {
		mode := modeRetry
		switch {
		case it.DeadLetter:
			mode = modeDeadLetter
		case it.Release:
			mode = modeRelease
		}
		args = append(args, it.ID, it.Attempt, Millis(it.Delay), mode, it.Reason)
	}
	n, err := Ints(script.Run(ctx, client, keys, args...).Slice())
	if err != nil {
		return backend.NackResult{}, err
	}
	return backend.NackResult{Requeued: int(n[0]), DeadLettered: int(n[1]), Stale: int(n[2])}, nil
}

// Extend runs an adapter's extend.lua with ARGV head, then lease in ms, then each item's id
// and attempt; the script returns the IDs the consumer no longer holds (nil for none). A lease
// that is not positive is a *backend.ConfigError; no items: no call.
func Extend(ctx context.Context, client redis.Scripter, script *redis.Script, keys []string, head []any, lease time.Duration, items []backend.Held) ([]string, error) {
	if lease <= 0 {
		return nil, &backend.ConfigError{Field: "ExtendParams.Lease", Reason: "must be positive"}
	}
	if len(items) == 0 {
		return nil, nil
	}
	args := HeldArgs(append(slices.Clip(head), Millis(lease)), items)
	res, err := script.Run(ctx, client, keys, args...).StringSlice()
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, nil
	}
	return res, nil
}
