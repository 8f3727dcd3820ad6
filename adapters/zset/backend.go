package zset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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

	// groups caches each topic's registered groups for Publish; publish.lua checks the cache
	// against Redis, so a stale entry costs one retry, never a wrong routing. One small entry
	// per topic published to.
	groups sync.Map // topic -> []string

	versionOK  atomic.Bool
	versionMu  sync.Mutex
	versionErr error
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
	return &Backend{client: client, opts: opts, maxBlock: blockBound(client)}, nil
}

// blockBound returns the longest BLPOP timeout that ends before the client's read timeout
// (normalised by go-redis: positive is a timeout, zero or negative none): three quarters of
// it, and at least blockOvershoot less.
func blockBound(client redis.UniversalClient) time.Duration {
	var rt time.Duration
	switch c := client.(type) {
	case *redis.Client:
		rt = c.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = c.Options().ReadTimeout
	}
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

// ready checks once per Backend that Redis is at least 6.2 (ZRANGE ... BYSCORE is a 6.2 form).
// A connection error is returned and the check runs again next time; a server that refuses
// INFO (ACLs, proxies) is assumed recent enough, and scripts then fail loudly if it is not.
func (b *Backend) ready(ctx context.Context) error {
	if b.versionOK.Load() {
		return nil
	}
	b.versionMu.Lock()
	defer b.versionMu.Unlock()
	if b.versionOK.Load() {
		return nil
	}
	if b.versionErr != nil {
		return b.versionErr
	}
	info, err := b.client.Info(ctx, "server").Result()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr):
		b.versionOK.Store(true)
		return nil
	case err != nil:
		return err
	}
	major, minor, ok := redisVersion(info)
	if ok && (major < 6 || major == 6 && minor < 2) {
		b.versionErr = fmt.Errorf("%w: server is %d.%d, relq needs 6.2 or later", pubsub.ErrRedisVersion, major, minor)
		return b.versionErr
	}
	b.versionOK.Store(true)
	return nil
}

// redisVersion reads major and minor from INFO server's redis_version line.
func redisVersion(info string) (major, minor int, ok bool) {
	for line := range strings.Lines(info) {
		v, found := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !found {
			continue
		}
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return 0, 0, false
		}
		var err1, err2 error
		major, err1 = strconv.Atoi(parts[0])
		minor, err2 = strconv.Atoi(parts[1])
		return major, minor, err1 == nil && err2 == nil
	}
	return 0, 0, false
}

// check validates names (as *pubsub.NameError) and the Redis version before a call.
// Pairs are kind, name: "topic", p.Topic, "group", p.Group, ...
func (b *Backend) check(ctx context.Context, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := pubsub.ValidateName(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return b.ready(ctx)
}

// ms converts a duration to whole milliseconds for a script, rounding up so that a positive
// duration never becomes zero.
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// heldArgs flattens fencing tokens into ARGV after head.
func heldArgs(head []any, items []pubsub.Held) []any {
	args := append(make([]any, 0, len(head)+2*len(items)), head...)
	for _, it := range items {
		args = append(args, it.ID, it.Attempt)
	}
	return args
}

// toInt reads an integer reply element.
func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}

// toInts reads a reply of integers.
func toInts(res []any, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(res))
	for i, v := range res {
		out[i] = toInt(v)
	}
	return out, nil
}
