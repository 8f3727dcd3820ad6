package adaptertest

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// Build makes an adapter's backend on client with its keys under prefix: the Harness's
// Backend and Faults. Each adapter's external tests define one around its New.
type Build func(client redis.UniversalClient, prefix string) (conformance.Harness, error)

// Factory is the conformance.Factory of build: each test gets a key prefix of its own on the
// shared server, or a private AOF server, which it may stop, when it asks for one.
func Factory(build Build) conformance.Factory {
	return func(t *testing.T, opts conformance.Options) conformance.Harness {
		server := redistest.Shared(t)
		if opts.Private {
			server = redistest.Start(t, redistest.Options{AOF: true})
		}
		h, err := build(server.Client(t), redistest.Prefix(t))
		require.NoError(t, err)
		closeBackend(t, h.Backend)
		if opts.Private {
			h.Outage = server.Outage
		}
		return h
	}
}
