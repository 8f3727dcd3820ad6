package streams_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/adaptertest"
)

// buildFormat makes the streams backend in format, and its Faults, for the shared test runs.
func buildFormat(format streams.Format) adaptertest.Build {
	return func(client redis.UniversalClient, prefix string) (conformance.Harness, error) {
		b, err := streams.New(client, streams.Options{Prefix: prefix, Format: format})
		if err != nil {
			return conformance.Harness{}, err
		}
		return conformance.Harness{Backend: b, Faults: b.Faults()}, nil
	}
}

// TestConformance runs the shared delivery-contract suite on the streams backend, in both
// formats: each test gets a key prefix of its own on the shared server (in FormatWatermill the
// stream is the bare topic, which the suite makes unique per test), or a private AOF server
// when it stops Redis.
func TestConformance(t *testing.T) {
	for _, format := range []streams.Format{streams.FormatNative, streams.FormatWatermill} {
		t.Run(string(format), func(t *testing.T) {
			t.Parallel()
			conformance.Run(t, adaptertest.Factory(buildFormat(format)))
		})
	}
}
