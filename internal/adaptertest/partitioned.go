package adaptertest

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/partition"
	"github.com/relq/relq/internal/redistest"
)

// Partitioned is the conformance.Factory of build with every topic laid out over p
// partitions of the adapter's native keys ({prefix:topic} tags): the Harness's Backend and
// Peer are partition.Backend wrappers of what build makes. The lifecycle cases the wrapper
// does not serve yet (Admin, ephemeral groups, fault injection) skip: the Harness is not
// Complete.
func Partitioned(build Build, p int) conformance.Factory {
	return func(t *testing.T, opts conformance.Options) conformance.Harness {
		server := redistest.Shared(t)
		if opts.Private {
			server = redistest.Start(t, redistest.Options{AOF: true})
		}
		prefix := redistest.Prefix(t)
		tag := func(topic string) string { return keys.Tag(prefix, topic) }
		wrap := func(client redis.UniversalClient) backend.Backend {
			h, err := build(client, prefix, opts)
			require.NoError(t, err)
			closeBackend(t, h.Backend)
			b, err := partition.Wrap(h.Backend, partition.Config{
				Client:     client,
				Tag:        tag,
				InUse:      func(topic string) string { return keys.Join(tag(topic), "meta") },
				Partitions: func(string) int { return p },
			})
			require.NoError(t, err)
			return b
		}
		client := server.Client(t)
		h := conformance.Harness{Backend: wrap(client)}
		if opts.Private {
			h.Outage = server.Outage
		}
		h.Peer = func() (backend.Backend, error) { return wrap(server.Client(t)), nil }
		return h
	}
}
