package streams_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
)

// TestConformance runs the shared delivery-contract suite on the streams backend, in both
// formats: each test gets a key prefix of its own on the shared server (in FormatWatermill the
// stream is the bare topic, which the suite makes unique per test), or a private AOF server
// when it stops Redis.
func TestConformance(t *testing.T) {
	for _, format := range []streams.Format{streams.FormatNative, streams.FormatWatermill} {
		t.Run(string(format), func(t *testing.T) {
			t.Parallel()
			conformance.Run(t, func(t *testing.T, opts conformance.Options) conformance.Harness {
				server := redistest.Shared(t)
				if opts.Private {
					server = redistest.Start(t, redistest.Options{AOF: true})
				}
				b, err := streams.New(server.Client(t), streams.Options{Prefix: redistest.Prefix(t), Format: format})
				require.NoError(t, err)
				h := conformance.Harness{Backend: b, Faults: b.Faults()}
				if opts.Private {
					h.Outage = server.Outage
				}
				return h
			})
		})
	}
}
