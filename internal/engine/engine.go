package engine

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/luakit"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Layout is the storage layout this code writes and reads, kept in each topic's meta HASH.
// Layout 1 (relq before the engine) kept the registry in a SET; a topic laid out so is refused.
const Layout = 2

// Store describes a backend's ready store.
type Store struct {
	// Name names the backend in errors: "list".
	Name string
	// Registry is the name of the topic's registry HASH (its key is T:<Registry>), distinct per
	// backend so each one's TopicNames finds only its own topics.
	Registry string
	// Legacy is the name of the same backend's layout-1 registry.
	Legacy string
	// Keys are the names of the store's per-group keys (T:g:<group>:<name>), in the order
	// store.lua reads them (STORE_KEY_NAMES).
	Keys []string
	// Lua holds lua/store.lua and the backend's own verbs.
	Lua fs.FS
	// Prelude sets the constants store.lua needs (Lua source).
	Prelude string
	// BatchSize bounds the ids one script call handles.
	BatchSize int
	// Priority clamps a message's priority to what the store keeps; nil keeps none (0).
	Priority func(int) int
}

// Engine keeps the group state of one backend over client. It is safe for concurrent use.
type Engine struct {
	client  redis.UniversalClient
	prefix  string
	store   Store
	scripts map[string]*redis.Script
	version backendkit.VersionGate
	// backlogLimit and backlogTTL bound a topic's backlog (Options).
	backlogLimit int
	backlogTTL   time.Duration
	// tombstoneTTL is how long a deleted group's tombstone lasts (Options).
	tombstoneTTL time.Duration
	// backlogRefuse makes a full backlog refuse a publish (Options.BacklogFull).
	backlogRefuse bool
	// idle lets an idle consumer's Claims skip claim.lua for a while.
	idle Idle
	// waits runs the backend's blocking waits on connections of their own.
	waits *backendkit.Waits

	// registries caches each topic's registry for Publish.
	registries sync.Map // topic -> *registry
	// registryIdle is registryIdle (tests shorten it); registriesSwept is when the last sweep
	// of registries began (unix ns).
	registryIdle    time.Duration
	registriesSwept atomic.Int64
	// regained keeps the largest re-registration count seen of each group registered again
	// (RegisterAgain): one entry per group that vanished, until the group is deleted.
	regained sync.Map // topic + "\x00" + group -> int64
	// lanes are this engine's publish lanes (publish.lua).
	lanes *backendkit.Lanes
}

// New returns the engine of store under prefix, with the backlog's default bounds.
func New(client redis.UniversalClient, prefix string, store Store) *Engine {
	e := &Engine{client: client, prefix: prefix, store: store,
		lanes: backendkit.NewLanes(), waits: backendkit.NewWaits(client),
		backlogLimit: backend.BacklogLimitDefault, backlogTTL: backend.BacklogTTLDefault,
		tombstoneTTL: backend.TombstoneTTLDefault, registryIdle: registryIdle}
	e.scripts = map[string]*redis.Script{}
	for _, verb := range []string{"publish", "ensuregroup", "claim", "ack", "nack", "extend", "reclaim",
		"stats", "deadletters", "requeue", "purge", "inject",
		"join", "pause", "topic", "deletegroup", "drain", "deletetopic", "regain"} {
		e.scripts[verb] = redis.NewScript(e.Source(luaFiles, verb))
	}
	for _, verb := range messageVerbs {
		e.scripts[verb] = redis.NewScript(e.Source(luaFiles, verb))
	}
	return e
}

// Source returns the text of the script of verb, whose file is lua/<verb>.lua in fsys (this
// package's or the store's; nil: this package's): common.lua, the constants, engine.lua,
// store.lua and lifecycle.lua (which uses the store's functions), each cut to the definitions
// the verb needs (luakit.Link), then the verb.
func (e *Engine) Source(fsys fs.FS, verb string) string {
	if fsys == nil {
		fsys = luaFiles
	}
	names := make([]string, len(e.store.Keys))
	for i, n := range e.store.Keys {
		names[i] = fmt.Sprintf("%q", n)
	}
	prelude := fmt.Sprintf("local LAYOUT = '%d'\nlocal STORE_NAME = %q\nlocal STORE_KEY_NAMES = {%s}\n%s",
		Layout, e.store.Name, strings.Join(names, ", "), e.store.Prelude)
	return luakit.Link(read(fsys, "lua/"+verb+".lua"), luakit.Common(), prelude,
		read(luaFiles, "lua/engine.lua"), read(e.store.Lua, "lua/store.lua"), read(luaFiles, "lua/lifecycle.lua"))
}

// Script returns the store's own verb (lua/<verb>.lua in Store.Lua) as a script.
func (e *Engine) Script(verb string) *redis.Script {
	return redis.NewScript(e.Source(e.store.Lua, verb))
}

func read(fsys fs.FS, name string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Client is the engine's Redis client.
func (e *Engine) Client() redis.UniversalClient { return e.client }

// Wait runs a backend's blocking command on a connection of its own, which reaches the
// server holding key (backendkit.Waits.Run): idle subscriptions never hold the client's
// pooled connections, and a wait whose ctx ends is ended in Redis at once.
func (e *Engine) Wait(ctx context.Context, key string, wait func(context.Context, redis.UniversalClient) error) error {
	return e.waits.Run(ctx, key, wait)
}

// WaitUnblocked is Wait for a blocking command whose reply must be read even when ctx ends
// (list's BLMOVE): ctx's end unblocks the command (CLIENT UNBLOCK ... TIMEOUT) rather than
// closing its connection (backendkit.Waits.RunUnblocked).
func (e *Engine) WaitUnblocked(ctx context.Context, key string, wait func(context.Context, redis.UniversalClient) error) error {
	return e.waits.RunUnblocked(ctx, key, wait)
}

// AddWaitHook adds a go-redis hook to the connections of blocking claims, which are not the
// client's: hooks added to that client (tracing, metrics) do not run on them.
func (e *Engine) AddWaitHook(hook redis.Hook) { e.waits.AddHook(hook) }

// Close closes the connections the backend opened for its blocking claims, ending the claims
// blocked on them; those and every later Claim that would block fail with an error wrapping
// backend.ErrClosed. Everything else keeps working on the client the backend was given, which
// Close does not close. Idle wait connections close by themselves after
// backendkit.WaitLinger; Close releases the rest at once. Close after the Subscribers.
func (e *Engine) Close() error { return e.waits.Close() }

// BatchSize is the most ids one script call handles.
func (e *Engine) BatchSize() int { return e.store.BatchSize }

// Check validates names (as *backend.NameError) and the Redis version before a call.
// Pairs are kind, name: "topic", p.Topic, "group", p.Group, ...
func (e *Engine) Check(ctx context.Context, pairs ...string) error {
	if err := backendkit.ValidateNames(pairs...); err != nil {
		return err
	}
	return e.version.Check(ctx, e.client)
}

// run runs a script of this package, translating a layout error reply.
func (e *Engine) run(ctx context.Context, verb string, keys []string, args ...any) *redis.Cmd {
	return e.RunScript(ctx, e.scripts[verb], keys, args...)
}

// RunScript runs script and translates its error replies: a layout error into a
// *LayoutError, gone() into an error matching backend.ErrGroupDeleted or ErrGroupLost, a durable group's
// refusal into backend.ErrNotEphemeral, and Redis's out-of-memory refusal into
// backend.ErrRedisFull.
func (e *Engine) RunScript(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := script.Run(ctx, e.client, keys, args...)
	if err := cmd.Err(); err != nil {
		cmd.SetErr(e.scriptError(err))
	}
	return cmd
}

// scriptError translates a script's error reply as RunScript does.
func (e *Engine) scriptError(err error) error {
	if l := e.layoutError(err); l != nil {
		return l
	}
	if r := e.replyError(err); r != nil {
		return r
	}
	return backendkit.RedisFull(err)
}
