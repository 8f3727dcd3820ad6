package zset_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
)

// TestConformance runs the shared delivery-contract suite on the zset backend: each test gets
// a key prefix of its own on the shared server, or a private AOF server when it stops Redis.
// The orphan test skips: zset declares no Capabilities.PendingOrphans.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T, opts conformance.Options) conformance.Harness {
		server := redistest.Shared(t)
		if opts.Private {
			server = redistest.Start(t, redistest.Options{AOF: true})
		}
		b, err := zset.New(server.Client(t), zset.Options{Prefix: redistest.Prefix(t)})
		require.NoError(t, err)
		h := conformance.Harness{Backend: b, Faults: b.Faults()}
		if opts.Private {
			h.Outage = server.Outage
		}
		return h
	})
}
