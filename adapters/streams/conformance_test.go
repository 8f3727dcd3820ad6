package streams_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/seal"
)

// buildFormat makes the streams backend in format, and its Faults, for the shared test runs,
// with the backlog bounds a conformance test asks for. In FormatWatermill a topic's keys are
// its stream, the bare topic, and relq's keys under {topic}:prefix.
func buildFormat(format streams.Format) adaptertest.Build {
	return func(client redis.UniversalClient, prefix string, opts conformance.Options) (conformance.Harness, error) {
		b, err := streams.New(client, streams.Options{Prefix: prefix, Format: format,
			BacklogLimit: opts.BacklogLimit, BacklogTTL: opts.BacklogTTL, TombstoneTTL: opts.TombstoneTTL, BacklogFull: opts.BacklogFull})
		if err != nil {
			return conformance.Harness{}, err
		}
		h := conformance.Harness{Backend: b, Faults: seal.Open(b)}
		if format == streams.FormatWatermill {
			h.Keys = adaptertest.TopicKeys(client,
				func(topic string) string { return keys.Join("{"+topic+"}", prefix) },
				func(topic string) []string { return []string{topic} })
		}
		return h, nil
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
