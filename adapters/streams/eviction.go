package streams

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

var _ pubsub.EvictionReader = (*Backend)(nil)

// Eviction reads Redis's maxmemory-policy and evicted keys (pubsub.EvictionReader).
func (b *Backend) Eviction(ctx context.Context) (pubsub.Eviction, error) {
	return backendkit.ReadEviction(ctx, b.client)
}
