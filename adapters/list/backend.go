package list

import (
	"embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/engine"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Backend is the list backend: it implements backend.Backend, backend.Admin,
// backend.Ephemeral, backend.TopicLister, backend.ReplicaWaiter and backend.EvictionReader,
// and Close. It is safe for concurrent use. Everything but the claim is the group engine
// that list and zset share, over this backend's ready store (lua/store.lua).
type Backend struct {
	shared // the contract's methods but Name, Capabilities and Claim
	e      *engine.Engine
	// maxBlock bounds one BLMOVE below the client's read timeout, so a blocking claim never
	// trips it (go-redis extends the read deadline only for its own typed blocking commands,
	// which take whole seconds). Zero: no bound.
	maxBlock time.Duration
}

var (
	_ backend.Backend       = (*Backend)(nil)
	_ backend.TopicLister   = (*Backend)(nil)
	_ backend.ReplicaWaiter = (*Backend)(nil)
	_ backend.Ephemeral     = (*Backend)(nil)
	_ backend.Admin         = (*Backend)(nil)
)

var _ backend.EvictionReader = (*Backend)(nil)

// wakeEntry is the ready entry that wakes a consumer blocked in BLMOVE for a delayed message
// it cannot see (lua/store.lua's WAKE). Message entries are "id@ms", so it is none of them.
const wakeEntry = "wake"

// New returns a list Backend on client. The Redis version (>= 6.2) is checked on first use,
// so New needs no round trip and works while Redis is still starting.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	e, err := engine.Open(client, opts, engine.Store{
		Name:     "list",
		Registry: "registry",
		Legacy:   "groups",
		Keys:     []string{"ready", "delayed", "processing"},
		Lua:      luaFiles,
		Prelude:  fmt.Sprintf("local WAKE = %q\n", wakeEntry),
	})
	if err != nil {
		return nil, err
	}
	e.AddScript("register")
	e.AddScript("promote")
	return &Backend{shared: e, e: e, maxBlock: blockBound(client)}, nil
}

// blockBound returns three quarters of the client's read timeout (normalised by go-redis:
// positive is a timeout, zero or negative none), leaving the reply time to arrive.
func blockBound(client redis.UniversalClient) time.Duration {
	rt := backendkit.ReadTimeout(client)
	if rt <= 0 {
		return 0
	}
	return max(rt*3/4, time.Millisecond)
}

// Name returns "list".
func (b *Backend) Name() string { return "list" }

// Capabilities: FIFO with one consumer, no replay for new groups, no priorities, orphans in
// the BLMOVE window, and on-time delays. Delays go through a per-group ZSET promoted by Claim,
// Reclaim, and a consumer's timer at the earliest due time it knows (see Claim), which a
// publish or nack that schedules an earlier one tells an idle consumer of: OnTimeDelay. No
// DueOrder: members due at the same millisecond are promoted in ZSET order, which compares
// delivery IDs as strings ("100" before "99"), not in publish order.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{FIFO: true, PendingOrphans: true, OnTimeDelay: true}
}

// keys returns the group's keys.
func (b *Backend) keys(topic, group string) engine.GroupKeys { return b.e.Keys(topic, group) }

// shared is the engine's part of the contract, embedded under a name of this package so that
// it adds the contract's methods and nothing else to Backend.
type shared = engine.Shared
