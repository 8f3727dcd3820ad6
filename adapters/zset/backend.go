package zset

import (
	"embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/keys"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// wakeTTL bounds how long an unclaimed wake-up token lives. A token matters only to a consumer
// blocked, or about to block, in BLPOP (a consumer that is not blocked runs claim.lua before it
// blocks anyway), so it need not outlive a round trip by much.
const wakeTTL = 10 * time.Second

// blockOvershoot is how late Redis may end a blocking command after its timeout: it checks
// those timeouts on its server tick, every 100 ms at the default hz 10. A block is bounded so
// that its timeout plus this still ends before the client's read deadline.
const blockOvershoot = 150 * time.Millisecond

// Backend is the zset backend: it implements backend.Backend, backend.Admin,
// backend.Ephemeral, backend.TopicLister, backend.ReplicaWaiter and backend.EvictionReader,
// and Close. It is safe for concurrent use. Everything but the claim is the group engine
// that list and zset share, over this backend's ready store (lua/store.lua).
type Backend struct {
	shared // the contract's methods but Name, Capabilities and Claim
	e      *engine.Engine
	// maxBlock bounds one BLPOP so that it ends before the client's read timeout, even when
	// Redis ends it late (go-redis extends the read deadline only for its own typed blocking
	// commands, which take whole seconds). Zero: no bound.
	maxBlock time.Duration
	// wake pushes a consumer's own wake-up token (lua/wake.lua).
	wake *redis.Script
}

var (
	_ backend.Backend       = (*Backend)(nil)
	_ backend.TopicLister   = (*Backend)(nil)
	_ backend.ReplicaWaiter = (*Backend)(nil)
	_ backend.Ephemeral     = (*Backend)(nil)
	_ backend.Admin         = (*Backend)(nil)
)

var _ backend.EvictionReader = (*Backend)(nil)

// New returns a zset Backend on client. The Redis version (>= 6.2) is checked on first use,
// so New needs no round trip and works while Redis is still starting.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	e, err := engine.Open(client, opts, engine.Store{
		Name:     "zset",
		Registry: "zregistry",
		Legacy:   "zgroups",
		Keys:     []string{"ready", "wake", "queue"},
		Lua:      luaFiles,
		Prelude: fmt.Sprintf("local PRIORITY_MIN, PRIORITY_MAX, RANK_DIGITS, DUE_DIGITS = %d, %d, %d, %d\nlocal WAKE_TTL_MS = %d\n",
			PriorityMin, PriorityMax, rankDigits, dueDigits, wakeTTL.Milliseconds()),
		Priority: clampPriority,
	})
	if err != nil {
		return nil, err
	}
	return &Backend{shared: e, e: e, maxBlock: blockBound(client), wake: e.Script("wake")}, nil
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

// Capabilities: FIFO with one consumer, priorities among due messages, delays in the ready
// store itself, woken on time and delivered in due order; no replay for new groups, and no
// orphans (claim.lua takes and leases in one script).
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{FIFO: true, Priorities: true, NativeDelay: true, OnTimeDelay: true, DueOrder: true}
}

// ownWake is consumer's own wake-up list, which its blocking claim watches besides the group's
// and pushes a token onto when the message it waits for is due. Consumer names hold no ':'.
func ownWake(k engine.GroupKeys, consumer string) string { return keys.Join(k.Store("wake"), consumer) }

// shared is the engine's part of the contract, embedded under a name of this package so that
// it adds the contract's methods and nothing else to Backend.
type shared = engine.Shared
