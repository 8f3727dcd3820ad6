package list_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/seal"
)

// build makes the list backend and its Faults for the shared test runs, with the backlog
// bounds a conformance test asks for.
func build(client redis.UniversalClient, prefix string, opts conformance.Options) (conformance.Harness, error) {
	b, err := list.New(client, list.Options{Prefix: prefix, BacklogLimit: opts.BacklogLimit, BacklogTTL: opts.BacklogTTL, TombstoneTTL: opts.TombstoneTTL, BacklogFull: opts.BacklogFull})
	if err != nil {
		return conformance.Harness{}, err
	}
	return conformance.Harness{Backend: b, Faults: seal.Open(b)}, nil
}

// TestConformance runs the shared delivery-contract suite on the list backend: each test gets
// a key prefix of its own on the shared server, or a private AOF server when it stops Redis.
func TestConformance(t *testing.T) {
	conformance.Run(t, adaptertest.Factory(build))
}
