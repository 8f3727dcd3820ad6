package streams

import (
	"testing"

	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/pubsub"
)

// The Redis client resends a script whose reply it lost; the resend of a publish appends
// nothing twice and returns the same entry IDs.
func TestPublishResentWithItsBatchKeyStoresOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("orders", pubsub.DefaultGroup)
	adaptertest.PublishResentStoresOnce(t, e.Env, func() string { return e.tk("orders").batchKey() },
		func(p *pubsub.PublishParams, batch string) ([]string, error) {
			res, err := e.b.publish(e.Ctx, p, batch)
			return res.IDs, err
		})
}
