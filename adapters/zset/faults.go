package zset

import (
	"context"
	"fmt"

	"github.com/relq/relq/backend"
)

// Faults injects states that only failures produce, so the conformance suite can check the
// recovery paths against real Redis. It is for tests: production code never calls it.
type Faults struct {
	b *Backend
}

// Faults returns the fault injector of b. For tests only.
func (b *Backend) Faults() *Faults { return &Faults{b: b} }

// InjectCorrupt stores data, bypassing the envelope codec, as a new message due now for group
// on topic (one inject.lua call), as foreign or corrupt data would be.
// Claiming it yields a Delivery whose Err wraps backend.ErrCorruptEntry.
func (f *Faults) InjectCorrupt(ctx context.Context, topic, group string, data []byte) error {
	return f.b.InjectCorrupt(ctx, topic, group, data)
}

// InjectOrphan reports backend.ErrNotImplemented: claim.lua takes a message and leases it in
// one script, so no delivery is ever pending without a lease (Capabilities.PendingOrphans is
// false, and the conformance suite skips the orphan test).
func (f *Faults) InjectOrphan(context.Context, string, string) (string, error) {
	return "", fmt.Errorf("zset: a delivery cannot be pending without a lease, so there is no orphan to inject: %w", backend.ErrNotImplemented)
}

// DeleteBody deletes the stored body of message id, as a hand edit or a lost write would;
// the next claim of it dead-letters it with the reason "body missing".
func (f *Faults) DeleteBody(ctx context.Context, topic, id string) error {
	return f.b.DeleteBody(ctx, topic, id)
}
