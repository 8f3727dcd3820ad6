package zset

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// blockOvershoot is how late Redis may end a blocking command after its timeout: it checks
// those timeouts on its server tick, every 100 ms at the default hz 10. A block is bounded so
// that its timeout plus this still ends before the client's read deadline.
const blockOvershoot = 150 * time.Millisecond

// Backend is the zset backend of pubsub.Backend. It is safe for concurrent use.
type Backend struct {
	client redis.UniversalClient
	opts   Options
	// maxBlock bounds one BLPOP so that it ends before the client's read timeout, even when
	// Redis ends it late (go-redis extends the read deadline only for its own typed blocking
	// commands, which take whole seconds). Zero: no bound.
	maxBlock time.Duration

	// groups caches each topic's registered groups for Publish.
	groups backendkit.Registry
	// version checks Redis is at least 6.2 on first use: ZRANGE ... BYSCORE is a 6.2 form.
	version backendkit.VersionGate
}

var _ pubsub.Backend = (*Backend)(nil)

// New returns a zset Backend on client. The Redis version (>= 6.2) is checked on first use,
// so New needs no round trip and works while Redis is still starting.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	if client == nil {
		return nil, &pubsub.ConfigError{Field: "client", Reason: "must not be nil"}
	}
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Backend{client: client, opts: opts, maxBlock: blockBound(client), groups: backendkit.Registry{Backend: "zset"}}, nil
}

// blockBound returns the longest BLPOP timeout that ends before the client's read timeout
// (normalised by go-redis: positive is a timeout, zero or negative none): three quarters of
// it, and at least blockOvershoot less.
func blockBound(client redis.UniversalClient) time.Duration {
	rt := backendkit.ReadTimeout(client)
	if rt <= 0 {
		return 0
	}
	return max(min(rt*3/4, rt-blockOvershoot), time.Millisecond)
}

// Name returns "zset".
func (b *Backend) Name() string { return "zset" }

// Capabilities: FIFO with one consumer, priorities, delays in the ready store itself, woken on
// time and delivered in due order; no replay for new groups, and no orphans (claim.lua takes
// and leases in one script).
func (b *Backend) Capabilities() pubsub.Capabilities {
	return pubsub.Capabilities{FIFO: true, Priorities: true, NativeDelay: true, OnTimeDelay: true, DueOrder: true}
}

// check validates names (as *pubsub.NameError) and the Redis version before a call.
// Pairs are kind, name: "topic", p.Topic, "group", p.Group, ...
func (b *Backend) check(ctx context.Context, pairs ...string) error {
	if err := backendkit.ValidateNames(pairs...); err != nil {
		return err
	}
	return b.version.Check(ctx, b.client)
}
