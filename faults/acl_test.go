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

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// The least-privilege ACL rule of each backend is its key pattern, no Pub/Sub channels, and
// exactly the commands its data plane sends (the Backend and backend.Ephemeral, which
// Publisher and Subscriber use): the ones its Go code sends directly (aclClientCommands), the
// script commands, and the commands its Lua scripts call, which Redis checks against the
// caller's ACL too (scanned from the Lua files its scripts are made of, see aclScriptFiles, so
// the rule cannot fall behind the scripts). The backend's backend.Admin is an operator's tool,
// run as a user of its own: its rule adds what Admin's Go code sends (aclAdminCommands).
// docs/operations.md prints the rules; TestACLRulesDocumented keeps it in step.
//
// The data-plane rule has the commands of every script of the backend, the Admin's scripts
// too: a user allowed EVAL can run any script, so leaving those out would not narrow what it
// may do. What Admin adds is SCAN, which ACL key patterns do not restrict: it shows the name
// of every key in the database.
//
// Nothing is needed for the connection handshake: Redis runs HELLO and AUTH before any ACL
// check. go-redis also sends CLIENT SETINFO, which Redis 7.0 does not know and which go-redis
// lets fail; on Redis 7.2 and later "+client|setinfo" keeps such refusals out of ACL LOG.
var (
	// aclScriptCommands run every script (EVALSHA, and EVAL when the script cache lost it).
	// GET reads a topic's partition record ({prefix:topic}:partitions) at its first use, from
	// Go and in the script that checks it at the first publish (internal/partition): every
	// Publisher and Subscriber does, to serve a topic created with partitions over them.
	aclScriptCommands = []string{"evalsha", "eval", "get"}
	// aclClientCommands are sent from Go, outside scripts, by each backend's data plane.
	// Groups reads the registry HASH of list and zset (HKEYS); the sweeps of Publish and
	// Reclaim read their trash and ephemeral ZSETs (ZRANGE, internal/engine's delete.go).
	aclClientCommands = map[string][]string{
		"list":    {"blmove", "hkeys", "zrange"}, // the blocking claim; the registry, trash
		"zset":    {"blpop", "hkeys", "zrange"},  // the blocking wait on wake-up lists; the registry, trash
		"streams": {"xread", "xinfo|groups"},     // the blocking wait for new entries; groups
	}
	// aclAdminCommands are sent from Go, outside scripts, by each backend's backend.Admin:
	// ListTopics finds the topics with SCAN (on every primary of a Cluster); DeleteTopic reads
	// the registry and the trash on list and zset (HKEYS, ZRANGE) and on streams the stream's
	// groups (XINFO GROUPS) and those whose delete is unfinished (SMEMBERS). Admin's scripts
	// are among the backend's Lua files, in the data-plane rule already.
	aclAdminCommands = map[string][]string{
		"list":    {"scan", "hkeys", "zrange"},
		"zset":    {"scan", "hkeys", "zrange"},
		"streams": {"scan", "xinfo|groups", "smembers"},
	}
	// aclUnblockCommands are optional: list asks each connection it opens for a blocking
	// wait for its client ID (CLIENT ID, once per connection, at its first BLMOVE), to end
	// a blocked BLMOVE when its subscription stops (CLIENT UNBLOCK, internal/backendkit's
	// RunUnblocked). Refused, the BLMOVE ends at its timeout, at most the claim's Block later.
	// TestACLConformance leaves them out, so the whole suite runs with them refused;
	// TestACLOnCluster grants them, so its ACL LOG shows they are all list needs for it.
	aclUnblockCommands = []string{"client|id", "client|unblock"}
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

// aclAdminRules returns the rules of an operator's user that may run backend's Admin, and
// its data plane, under prefix.
func aclAdminRules(t *testing.T, backend, prefix string, extra ...string) []string {
	t.Helper()
	return aclRules(t, backend, prefix, slices.Concat(aclAdminCommands[backend], extra)...)
}

// aclAdminAdditions returns, sorted, the commands backend's Admin sends that its data-plane
// rule lacks.
func aclAdminAdditions(t *testing.T, backend string) []string {
	t.Helper()
	data := aclCommands(t, backend)
	out := slices.DeleteFunc(slices.Clone(aclAdminCommands[backend]), func(c string) bool { return slices.Contains(data, c) })
	slices.Sort(out)
	return slices.Compact(out)
}

// aclUser returns a user with a fresh name and password and the given rules.
func aclUser(rules []string) redistest.User {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	return redistest.User{Name: "relq-" + id[:8], Password: id, Rules: rules}
}

// The whole conformance suite passes for every backend when each test's backend runs as a
// user allowed only that test's key prefix and the backend's data-plane commands, and its
// Admin as an operator's user with the Admin's additions (aclHarness). Afterwards ACL LOG
// shows that the only commands Redis refused are optional ones: INFO, which relq uses only to
// check the Redis version and the eviction policy, and CLIENT ID (aclUnblockCommands).
func TestACLConformance(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{Args: []string{"--acllog-max-len", "10000"}})
	t.Run("Suite", func(t *testing.T) {
		for _, bc := range faultBackends {
			t.Run(bc.name, func(t *testing.T) {
				t.Parallel()
				conformance.Run(t, func(t *testing.T, opts conformance.Options) conformance.Harness {
					return aclHarness(t, bc, server, opts)
				})
			})
		}
	})
	refused := aclRefusals(t, server.Client(t))
	t.Logf("refused by ACL during the suite: %v", refused)
	tolerated := slices.Concat(aclTolerated, aclUnblockCommands)
	for object := range refused {
		require.Contains(t, tolerated, object, "Redis refused a command relq sends")
	}
}

// On Redis Cluster the same rules work with +cluster|slots +command added, for the slot map
// and command table go-redis reads; PublisherConfig.WaitReplicas adds the backend's
// aclReplicaCommands, and the optional aclUnblockCommands are granted here, so that ACL LOG
// shows nothing of them refused. ACL users are per node, so the user is created on every
// node. Each backend makes a round trip over topics on all three primaries, waiting for a
// replica on every publish.
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
				user := aclUser(aclRules(t, bc.name, prefix, slices.Concat(aclClusterCommands, aclReplicaCommands[bc.name], aclUnblockCommands)...))
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

// aclTolerated are commands relq or go-redis send and do without: INFO (the version and
// eviction checks; relq then assumes a recent Redis and reports no policy) and, on Redis 7.2
// and later, go-redis's CLIENT SETINFO. A rule without aclUnblockCommands adds those.
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
			_, err = denied.Stats(ctx, &backend.StatsParams{Topic: "orders", Group: backend.DefaultGroup})
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

// docs/operations.md prints each backend's rule, the rule for all three, the additions for
// Cluster, WaitReplicas and the optional CLIENT commands, and the Admin's additions and the
// operator's rule for all three, exactly as the tests above apply them.
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
	all = slices.Compact(all)
	require.Contains(t, doc, commandRules(all), "docs/operations.md lacks the commands of all backends")
	require.Contains(t, doc, commandRules(aclClusterCommands), "docs/operations.md lacks the Cluster additions")
	require.Contains(t, doc, commandRules(aclUnblockCommands), "docs/operations.md lacks the optional CLIENT ID and UNBLOCK")
	var admin []string
	for _, bc := range faultBackends {
		require.Contains(t, doc, commandRules(aclReplicaCommands[bc.name]), "docs/operations.md lacks the WaitReplicas additions of %s", bc.name)
		require.Contains(t, doc, commandRules(aclAdminAdditions(t, bc.name)), "docs/operations.md lacks the Admin additions of %s", bc.name)
		admin = append(admin, aclAdminCommands[bc.name]...)
	}
	admin = append(admin, all...)
	slices.Sort(admin)
	require.Contains(t, doc, "-@all "+commandRules(slices.Compact(admin))+"\n", "docs/operations.md lacks the operator's rule for all backends")
}

// commandRules writes commands as ACL rules: "+a +b".
func commandRules(cmds []string) string { return "+" + strings.Join(cmds, " +") }
