package streams

import (
	"context"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

var _ backend.EvictionReader = (*Backend)(nil)

// Eviction reads Redis's maxmemory-policy and evicted keys (backend.EvictionReader).
func (b *Backend) Eviction(ctx context.Context) (backend.Eviction, error) {
	return backendkit.ReadEviction(ctx, b.client)
}
