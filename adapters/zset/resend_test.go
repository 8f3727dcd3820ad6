package zset

import (
	"testing"

	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/pubsub"
)

// The Redis client resends a script whose reply it lost; the resend of a publish stores
// nothing twice and returns the same delivery IDs.
func TestPublishResentWithItsBatchKeyStoresOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	adaptertest.PublishResentStoresOnce(t, e.Env, func() string { return e.b.batchKey("orders") },
		func(p *pubsub.PublishParams, batch string) ([]string, error) { return e.b.publish(e.Ctx, p, batch) })
}
