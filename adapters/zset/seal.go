package zset

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/seal"
)

// inner is what the backend opens to relq's own tests through internal/seal: fault injection
// (states that only failures produce, so the conformance suite can check the recovery paths
// against real Redis) and hooks on the blocking claims' connections. No production code
// reaches it.
type inner struct{ b *Backend }

func init() {
	seal.Register(func(x any) (seal.Inner, bool) {
		b, ok := x.(*Backend)
		return inner{b}, ok
	})
}

// InjectCorrupt stores data, bypassing the envelope codec, as a new message due now for group
// on topic (one inject.lua call), as foreign or corrupt data would be.
// Claiming it yields a Delivery whose Err wraps backend.ErrCorruptEntry.
func (f inner) InjectCorrupt(ctx context.Context, topic, group string, data []byte) error {
	return f.b.e.InjectCorrupt(ctx, topic, group, data)
}

// InjectOrphan reports backend.ErrNotImplemented: claim.lua takes a message and leases it in
// one script, so no delivery is ever pending without a lease (Capabilities.PendingOrphans is
// false, and the conformance suite skips the orphan test).
func (f inner) InjectOrphan(context.Context, string, string) (string, error) {
	return "", fmt.Errorf("zset: a delivery cannot be pending without a lease, so there is no orphan to inject: %w", backend.ErrNotImplemented)
}

// DeleteBody deletes the stored body of message id, as a hand edit or a lost write would;
// the next claim of it dead-letters it with the reason "body missing".
func (f inner) DeleteBody(ctx context.Context, topic, id string) error {
	return f.b.e.DeleteBody(ctx, topic, id)
}

// AddWaitHook adds hook to the connections of blocking claims, which are not the client's.
func (f inner) AddWaitHook(hook redis.Hook) { f.b.e.AddWaitHook(hook) }

// Engine returns the backend's engine, for the engine's own tests of this store.
func (f inner) Engine() *engine.Engine { return f.b.e }
