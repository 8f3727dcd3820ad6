package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// The least-privilege ACL rule of each backend is its key pattern, no Pub/Sub channels, and
// exactly the commands it sends: the ones its Go code sends directly (aclClientCommands), the
// script commands, and the commands its Lua scripts call, which Redis checks against the
// caller's ACL too (scanned from the Lua files its scripts are made of, see aclScriptFiles, so
// the rule cannot fall behind the scripts). docs/operations.md prints the rules;
// TestACLRulesDocumented keeps it in step.
//
// Nothing is needed for the connection handshake: Redis runs HELLO and AUTH before any ACL
// check. go-redis also sends CLIENT SETINFO, which Redis 7.0 does not know and which go-redis
// lets fail; on Redis 7.2 and later "+client|setinfo" keeps such refusals out of ACL LOG.
var (
	// aclScriptCommands run every script (EVALSHA, and EVAL when the script cache lost it).
	aclScriptCommands = []string{"evalsha", "eval"}
	// aclClientCommands are sent from Go, outside scripts, by each backend.
	// Groups and DeleteTopic read the registry HASH of list and zset (HKEYS); DeleteTopic and
	// the sweeps of Publish and Reclaim read the trash and ephemeral ZSETs (ZRANGE,
	// internal/engine's delete.go).
	aclClientCommands = map[string][]string{
		"list":    {"blmove", "hkeys", "zrange"}, // the blocking claim; the registry, trash
		"zset":    {"blpop", "hkeys", "zrange"},  // the blocking wait on wake-up lists; the registry, trash
		"streams": {"xread", "xinfo|groups"},   // the blocking wait for new entries; groups
	}
	// aclReplicaCommands serve PublisherConfig.WaitReplicas (internal/replicas): WAIT after a
	// write that changes nothing, on the topic's meta HASH (list, zset: HINCRBY meta seq 0) or
	// its publish counter (streams: INCRBY).
	aclReplicaCommands = map[string][]string{
		"list":    {"hincrby", "wait"},
		"zset":    {"hincrby", "wait"},
		"streams": {"incrby", "wait"},
	}
	// aclClusterCommands serve redis.NewClusterClient: it reads the slot map (CLUSTER SLOTS)
	// and the command table (COMMAND), which it asks for again before every command while
	// it is refused, from up to three nodes.
	aclClusterCommands = []string{"cluster|slots", "command"}
)

// aclScriptFiles are the Lua files each backend's scripts are made of: its own
// (adapters/<name>/lua), internal/engine's when the backend runs on the group-state engine
// (list and zset), and internal/luakit's common.lua, which every script starts with. The
// test-only inject.lua is left out: the Faults injector stands for a foreign writer and uses a
// privileged client here. luakit.Link gives each script only the helpers it calls, so this
// may list a command that no script of the backend reaches; never one short.
func aclScriptFiles(t *testing.T, backend string) []string {
	t.Helper()
	dirs := []string{filepath.Join("..", "adapters", backend, "lua")}
	if usesEngine(t, backend) {
		dirs = append(dirs, filepath.Join("..", "internal", "engine", "lua"))
	}
	var files []string
	for _, dir := range dirs {
		found, err := filepath.Glob(filepath.Join(dir, "*.lua"))
		require.NoError(t, err)
		require.NotEmpty(t, found, "no scripts in %s for the %s backend", dir, backend)
		files = append(files, found...)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "inject.lua" })
	return append(files, filepath.Join("..", "internal", "luakit", "common.lua"))
}

// enginePackage is the import path of the group-state engine, whose scripts a backend that
// imports it runs.
const enginePackage = "github.com/relq/relq/internal/engine"

// usesEngine reports whether the backend's Go code (not its tests) imports internal/engine.
func usesEngine(t *testing.T, backend string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "adapters", backend, "*.go"))
	require.NoError(t, err)
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range file.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == enginePackage {
				return true
			}
		}
	}
	return false
}

// luaCall matches a command named literally in a script: redis.call('ZADD', ...), and the
// helpers that take the command as their first argument, such as common.lua's
// call_chunked('ZADD', key, args, width).
var luaCall = regexp.MustCompile(`(?:redis\.p?call|\bcall_\w+)\(\s*['"]([A-Za-z]+)['"](?:\s*,\s*['"]([A-Za-z]+)['"])?`)

// luaCommands returns the commands the backend's scripts call, as ACL names: "zadd",
// "xgroup|create".
func luaCommands(t *testing.T, backend string) []string {
	t.Helper()
	withSubcommands := map[string]bool{"xgroup": true, "xinfo": true, "object": true, "client": true, "memory": true}
	var out []string
	for _, f := range aclScriptFiles(t, backend) {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range luaCall.FindAllStringSubmatch(string(src), -1) {
			cmd := strings.ToLower(m[1])
			if withSubcommands[cmd] {
				cmd += "|" + strings.ToLower(m[2])
			}
			out = append(out, cmd)
		}
	}
	return out
}

// aclCommands returns the sorted, distinct commands backend needs, plus extra.
func aclCommands(t *testing.T, backend string, extra ...string) []string {
	t.Helper()
	cmds := slices.Concat(aclScriptCommands, aclClientCommands[backend], luaCommands(t, backend), extra)
	slices.Sort(cmds)
	return slices.Compact(cmds)
}

// aclRules returns the rules of a user that may run backend under prefix and nothing else.
func aclRules(t *testing.T, backend, prefix string, extra ...string) []string {
	t.Helper()
	rules := []string{"resetkeys", "~{" + prefix + ":*", "resetchannels", "-@all"}
	for _, c := range aclCommands(t, backend, extra...) {
		rules = append(rules, "+"+c)
	}
	return rules
}

// aclUser returns a user with a fresh name and password and the given rules.
func aclUser(rules []string) redistest.User {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	return redistest.User{Name: "relq-" + id[:8], Password: id, Rules: rules}
}

// The whole conformance suite passes for every backend when each test's client is a user
// allowed only that test's key prefix and the backend's commands. The test that stops Redis
// gets a server of its own that creates the user at start-up, so it survives the restart.
// Afterwards ACL LOG shows that the only command Redis refused was INFO, which relq uses
// only to check the Redis version and does without.
func TestACLConformance(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{Args: []string{"--acllog-max-len", "10000"}})
	admin := server.Client(t)
	t.Run("Suite", func(t *testing.T) {
		for _, bc := range faultBackends {
			t.Run(bc.name, func(t *testing.T) {
				t.Parallel()
				conformance.Run(t, func(t *testing.T, opts conformance.Options) conformance.Harness {
					prefix := redistest.Prefix(t)
					user := aclUser(aclRules(t, bc.name, prefix))
					srv, privileged := server, admin
					if opts.Private {
						srv = redistest.Start(t, redistest.Options{AOF: true, Args: user.ServerArgs()})
						privileged = srv.Client(t)
					} else {
						server.AddUser(t, user)
					}
					b, _ := newFaultBackend(t, bc, srv.ClientAs(t, user), prefix)
					_, injector := newFaultBackend(t, bc, privileged, prefix)
					h := conformance.Harness{Backend: b, Faults: conformanceFaults(t, injector)}
					if opts.Private {
						h.Outage = srv.Outage
					}
					return h
				})
			})
		}
	})
	refused := aclRefusals(t, admin)
	t.Logf("refused by ACL during the suite: %v", refused)
	for object := range refused {
		require.Contains(t, aclTolerated, object, "Redis refused a command relq sends")
	}
}

// On Redis Cluster the same rules work with +cluster|slots +command added, for the slot map
// and command table go-redis reads; PublisherConfig.WaitReplicas adds the backend's
// aclReplicaCommands. ACL users are per node, so the user is created on every node. Each
// backend makes a round trip over topics on all three primaries, waiting for a replica on
// every publish.
func TestACLOnCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{})
	primaries, err := cluster.Primaries()
	require.NoError(t, err)
	addrs := make([]string, len(primaries))
	for i, p := range primaries {
		addrs[i] = p.Addr()
	}
	t.Run("RoundTrip", func(t *testing.T) {
		for _, bc := range faultBackends {
			t.Run(bc.name, func(t *testing.T) {
				t.Parallel()
				prefix := redistest.Prefix(t)
				user := aclUser(aclRules(t, bc.name, prefix, slices.Concat(aclClusterCommands, aclReplicaCommands[bc.name])...))
				for _, node := range cluster.Nodes {
					node.AddUser(t, user)
				}
				cc := redis.NewClusterClient(&redis.ClusterOptions{
					Addrs: cluster.Addrs(), Username: user.Name, Password: user.Password,
					ClusterStateReloadInterval: time.Second,
				})
				t.Cleanup(func() { _ = cc.Close() })
				b, _ := newFaultBackend(t, bc, cc, prefix)
				var topics []string
				for _, ts := range topicsPerPrimary(t, cc, prefix, addrs, 1) {
					topics = append(topics, ts...)
				}
				roundTrip(t, b, pubsub.PublisherConfig{WaitReplicas: 1}, topics, 20)
			})
		}
	})
	for _, node := range cluster.Nodes {
		for object := range aclRefusals(t, node.Client(t)) {
			require.Contains(t, aclTolerated, object, "node %s refused a command relq sends", node.Addr())
		}
	}
}

// aclTolerated are commands relq or go-redis send and do without: INFO (the version check;
// relq then assumes a recent Redis) and, on Redis 7.2 and later, go-redis's CLIENT SETINFO.
var aclTolerated = []string{"info", "client|setinfo"}

// aclRefusals returns what ACL LOG holds, by object (command or key) and reason.
func aclRefusals(t *testing.T, admin *redis.Client) map[string]string {
	t.Helper()
	entries, err := admin.ACLLog(context.Background(), 10000).Result()
	require.NoError(t, err)
	out := make(map[string]string)
	for _, e := range entries {
		out[e.Object] = e.Reason
	}
	return out
}

// A user allowed one prefix gets a clear NOPERM error from a backend configured with another
// prefix, and cannot run commands relq does not need, while its own prefix works.
func TestACLOtherPrefixDenied(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			own, other := redistest.Prefix(t), redistest.Prefix(t)
			user := aclUser(aclRules(t, bc.name, own))
			server.AddUser(t, user)
			client := server.ClientAs(t, user)

			b, _ := newFaultBackend(t, bc, client, own)
			pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, faultLogger)
			require.NoError(t, err)
			sub := newFaultSubscriber(t, b, pubsub.SubscriberConfig{Block: 100 * time.Millisecond})
			ch, err := sub.Subscribe(ctx, "orders")
			require.NoError(t, err)
			msg := message.NewMessage(watermill.NewUUID(), []byte("allowed"))
			require.NoError(t, pub.Publish("orders", msg))
			select {
			case got := <-ch:
				require.Equal(t, msg.UUID, got.UUID)
				got.Ack()
			case <-time.After(settleTimeout):
				require.FailNow(t, "the message on the user's own prefix was not delivered")
			}

			denied, _ := newFaultBackend(t, bc, client, other)
			dpub, err := pubsub.NewPublisher(denied, pubsub.PublisherConfig{}, faultLogger)
			require.NoError(t, err)
			err = dpub.Publish("orders", message.NewMessage(watermill.NewUUID(), []byte("denied")))
			requireNoPerm(t, err)
			require.Contains(t, err.Error(), "no permissions to access", "the error should name the key permission")
			t.Logf("publish to another prefix: %v", err)
			_, err = denied.Stats(ctx, &pubsub.StatsParams{Topic: "orders", Group: pubsub.DefaultGroup})
			requireNoPerm(t, err)

			// The other prefix was left alone.
			keys, err := server.Client(t).Keys(ctx, "{"+other+":*").Result()
			require.NoError(t, err)
			require.Empty(t, keys)

			for _, cmd := range [][]any{{"flushall"}, {"keys", "*"}, {"config", "get", "*"}, {"get", "foreign"}, {"publish", "ch", "x"}} {
				requireNoPerm(t, client.Do(ctx, cmd...).Err())
			}
		})
	}
}

func requireNoPerm(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var rerr redis.Error
	require.True(t, errors.As(err, &rerr), "want a Redis error reply, got %T: %v", err, err)
	require.Contains(t, err.Error(), "NOPERM")
}

// docs/operations.md prints each backend's rule, the rule for all three, and the additions
// for Cluster and WaitReplicas, exactly as the tests above apply them.
func TestACLRulesDocumented(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	require.NoError(t, err)
	doc := strings.ReplaceAll(string(raw), `\|`, "|") // as Markdown tables escape it
	var all []string
	for _, bc := range faultBackends {
		cmds := aclCommands(t, bc.name)
		all = append(all, cmds...)
		require.Contains(t, doc, commandRules(cmds), "docs/operations.md lacks the %s backend's commands", bc.name)
	}
	slices.Sort(all)
	require.Contains(t, doc, commandRules(slices.Compact(all)), "docs/operations.md lacks the commands of all backends")
	require.Contains(t, doc, commandRules(aclClusterCommands), "docs/operations.md lacks the Cluster additions")
	for _, bc := range faultBackends {
		require.Contains(t, doc, commandRules(aclReplicaCommands[bc.name]), "docs/operations.md lacks the WaitReplicas additions of %s", bc.name)
	}
}

// commandRules writes commands as ACL rules: "+a +b".
func commandRules(cmds []string) string { return "+" + strings.Join(cmds, " +") }
