package zset

import (
	"context"
	"fmt"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/seal"
)

// inner is what the backend opens to relq's own tests through internal/seal: fault injection
// (states that only failures produce, so the conformance suite can check the recovery paths
// against real Redis) and hooks on the blocking claims' connections. No production code
// reaches it.
type inner struct{ engine.Sealed }

func init() {
	seal.Register(func(x any) (seal.Inner, bool) {
		b, ok := x.(*Backend)
		if !ok {
			return nil, false
		}
		return inner{engine.Sealed{E: b.e}}, true
	})
}

// InjectOrphan reports backend.ErrNotImplemented: claim.lua takes a message and leases it in
// one script, so no delivery is ever pending without a lease (Capabilities.PendingOrphans is
// false, and the conformance suite skips the orphan test).
func (f inner) InjectOrphan(context.Context, string, string) (string, error) {
	return "", fmt.Errorf("zset: a delivery cannot be pending without a lease, so there is no orphan to inject: %w", backend.ErrNotImplemented)
}
