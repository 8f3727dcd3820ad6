package adaptertest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// Build makes an adapter's backend on client with its keys under prefix, with the options a
// conformance test asks for (Options.BacklogLimit, BacklogTTL): the Harness's Backend and
// Faults, and its Keys where the backend's keys of a topic are not all under
// keys.Tag(prefix, topic). Each adapter's external tests define one around its New.
type Build func(client redis.UniversalClient, prefix string, opts conformance.Options) (conformance.Harness, error)

// Factory is the conformance.Factory of build: each test gets a key prefix of its own on the
// shared server, or a private AOF server, which it may stop, when it asks for one. The
// Harness lists a topic's keys under keys.Tag(prefix, topic) unless build set Keys, gives a
// Peer (build again, on a client of its own), and is Complete: relq's backends implement
// every lifecycle interface, so none of those cases may skip.
func Factory(build Build) conformance.Factory {
	return func(t *testing.T, opts conformance.Options) conformance.Harness {
		server := redistest.Shared(t)
		if opts.Private {
			server = redistest.Start(t, redistest.Options{AOF: true})
		}
		client, prefix := server.Client(t), redistest.Prefix(t)
		h, err := build(client, prefix, opts)
		require.NoError(t, err)
		closeBackend(t, h.Backend)
		if opts.Private {
			h.Outage = server.Outage
		}
		if h.Keys == nil {
			h.Keys = TopicKeys(client, func(topic string) string { return keys.Tag(prefix, topic) }, nil)
		}
		if h.Forget == nil {
			h.Forget = Forget(client, h.Keys)
		}
		h.Peer = func() (backend.Backend, error) {
			peer, err := build(server.Client(t), prefix, opts)
			if err != nil {
				return nil, err
			}
			closeBackend(t, peer.Backend)
			return peer.Backend, nil
		}
		h.Complete = true
		return h
	}
}

// TopicKeys returns a conformance Harness.Keys: the keys under base(topic)+":" (found with
// SCAN), and those of also(topic) that exist (nil: none).
func TopicKeys(c redis.UniversalClient, base func(topic string) string, also func(topic string) []string) func(topic string) ([]string, error) {
	return func(topic string) ([]string, error) {
		ctx := context.Background()
		under := base(topic) + ":"
		var out []string
		var scanner redis.UniversalClient = c
		if cc, ok := c.(*redis.ClusterClient); ok { // the keys of one tag live on one primary
			node, err := cc.MasterForKey(ctx, under)
			if err != nil {
				return nil, err
			}
			scanner = node
		}
		iter := scanner.Scan(ctx, 0, under+"*", 1000).Iterator()
		for iter.Next(ctx) {
			out = append(out, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return nil, err
		}
		if also == nil {
			return out, nil
		}
		for _, k := range also(topic) {
			n, err := c.Exists(ctx, k).Result()
			if err != nil {
				return nil, err
			}
			if n == 1 {
				out = append(out, k)
			}
		}
		return out, nil
	}
}
