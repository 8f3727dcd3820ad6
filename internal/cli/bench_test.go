package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

// TestBenchQuickJSONHasEveryFigure runs `relq bench --quick --json --svg` against the shared
// test server and checks that every figure is there for every backend and the baseline
// (not their values: nothing here asserts speed).
func TestBenchQuickJSONHasEveryFigure(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	getenv := func(k string) string {
		if k == "REDIS_URL" {
			return srv.URL()
		}
		return ""
	}
	svg := filepath.Join(t.TempDir(), "bench.svg")
	code, out := runCLI(t, Env{Getenv: getenv}, "bench", "--quick", "--json", "--svg", svg)
	require.Equal(t, 0, code)

	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	ref := rep["reference"].(map[string]any)
	if _, err := exec.LookPath("redis-benchmark"); err == nil {
		require.Greater(t, ref["lpush_per_sec"], 0.0, "reference: %v", ref)
		require.Len(t, ref["lpush_per_sec_runs"], 2, "reference: one run before the rounds, one after: %v", ref)
	} else {
		require.NotEmpty(t, ref["note"])
	}

	require.Equal(t, 1.0, rep["config"].(map[string]any)["rounds"], "--quick makes one round")
	require.Len(t, rep["round_orders"], 1)

	targets := rep["targets"].([]any)
	names := map[string]bool{}
	for _, raw := range targets {
		tr := raw.(map[string]any)
		name := tr["name"].(string)
		names[name] = true
		for _, key := range []string{"publish_single_per_sec", "publish_batch_per_sec", "memory_bytes_per_message"} {
			require.IsType(t, 0.0, tr[key], "%s %s", name, key)
		}
		e2e := tr["end_to_end_per_sec"].(map[string]any)
		e2eConcurrent := tr["end_to_end_concurrent_per_sec"].(map[string]any)
		for _, n := range []string{"1", "4", "16"} {
			require.Greater(t, e2e[n], 0.0, "%s end-to-end at %s subscribers", name, n)
			require.Greater(t, e2eConcurrent[n], 0.0, "%s end-to-end while publishing at %s subscribers", name, n)
		}
		lat := tr["pickup_latency_ms"].(map[string]any)
		for _, key := range []string{"p50", "p99", "max"} {
			require.IsType(t, 0.0, lat[key], "%s pickup %s", name, key)
		}
		require.Greater(t, lat["n"], 0.0)
		rec := tr["recovery"].(map[string]any)
		for _, key := range []string{"lease_ms", "total_ms", "after_lease_ms"} {
			require.IsType(t, 0.0, rec[key], "%s recovery %s", name, key)
		}
		idle := tr["idle_commands"].(map[string]any)
		require.IsType(t, 0.0, idle["sent_per_sec"], name)
		require.IsType(t, 0.0, idle["redis_per_sec"], name)
		requireCosts(t, name, tr)
		requireRounds(t, name, tr)
		if name == "zset" {
			prio := tr["priority_pickup"].(map[string]any)
			for _, key := range []string{"due_now", "delayed", "delayed_backlog"} {
				require.IsType(t, 0.0, prio[key].(map[string]any)["ms"], "zset priority pickup %s", key)
			}
		} else {
			require.Nil(t, tr["priority_pickup"], "%s has no priorities", name)
		}
		if name == "redisstream" {
			require.Nil(t, tr["scale"], "the scale phase drives relq backends only")
		} else {
			requireScale(t, name, tr["scale"])
		}
		if name != "redisstream" { // every relq backend has on-time delays and nack delays
			late := tr["delay_lateness_ms"].(map[string]any)
			for _, bound := range []string{"upper", "lower"} {
				p := late[bound].(map[string]any)
				require.IsType(t, 0.0, p["p50"], "%s lateness %s", name, bound)
				require.IsType(t, 0.0, p["p99"], "%s lateness %s", name, bound)
			}
			retry := tr["retry_lateness_ms"].(map[string]any)
			for _, key := range []string{"p50", "p99", "max"} {
				require.IsType(t, 0.0, retry[key], "%s retry lateness %s", name, key)
			}
			require.Greater(t, retry["n"], 0.0, name)
		} else {
			require.Nil(t, tr["delay_lateness_ms"], name)
			require.NotEmpty(t, tr["delay_note"], name)
			require.Nil(t, tr["retry_lateness_ms"], name)
		}
	}
	require.Equal(t, map[string]bool{"list": true, "zset": true, "streams": true, "redisstream": true}, names)

	goals := rep["goals"].([]any)
	require.NotEmpty(t, goals)
	for _, raw := range goals {
		g := raw.(map[string]any)
		results := g["results"].([]any)
		require.Len(t, results, 3, "goal %v: one result per relq backend", g["name"])
		for _, r := range results {
			require.NotEmpty(t, r.(map[string]any)["shown"], "goal %v", g["name"])
		}
	}

	chart, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Contains(t, string(chart), "<svg")
	require.Contains(t, string(chart), "redisstream")
}

// requireCosts checks that every Redis cost figure of a target is there: positive commands
// per message, split by command, for single, batched and concurrent publishing and for
// consume+ack.
func requireCosts(t *testing.T, name string, tr map[string]any) {
	t.Helper()
	costs := map[string]any{
		"publish_single_redis":     tr["publish_single_redis"],
		"publish_batch_redis":      tr["publish_batch_redis"],
		"publish_concurrent.redis": tr["publish_concurrent"].(map[string]any)["redis"],
		"consume.redis":            tr["consume"].(map[string]any)["redis"],
	}
	for key, raw := range costs {
		cost := raw.(map[string]any)
		require.Greater(t, cost["commands_per_msg"], 0.0, "%s %s", name, key)
		require.IsType(t, 0.0, cost["cpu_us_per_msg"], "%s %s", name, key)
		require.NotEmpty(t, cost["by_command"], "%s %s", name, key)
	}
	require.Greater(t, tr["publish_concurrent"].(map[string]any)["per_sec"], 0.0, name)
	require.Greater(t, tr["consume"].(map[string]any)["per_sec"], 0.0, name)
}

// requireRounds checks that every figure measured in rounds has its one round (--quick),
// equal to the figure reported.
func requireRounds(t *testing.T, name string, tr map[string]any) {
	t.Helper()
	rounds := tr["rounds"].(map[string]any)
	perSec := func(key string) float64 {
		rv := rounds[key].(map[string]any)
		vs := rv["per_sec"].([]any)
		require.Len(t, vs, 1, "%s %s", name, key)
		return vs[0].(float64)
	}
	require.Equal(t, tr["publish_single_per_sec"], perSec("publish_single"), name)
	require.Equal(t, tr["publish_batch_per_sec"], perSec("publish_batch"), name)
	require.Equal(t, tr["publish_concurrent"].(map[string]any)["per_sec"], perSec("publish_concurrent"), name)
	require.Equal(t, tr["consume"].(map[string]any)["per_sec"], perSec("consume"), name)
	cpu := rounds["consume"].(map[string]any)["cpu_us_per_msg"].([]any)
	require.Equal(t, tr["consume"].(map[string]any)["redis"].(map[string]any)["cpu_us_per_msg"], cpu[0], name)
	for _, n := range []string{"1", "4", "16"} {
		require.Equal(t, tr["end_to_end_per_sec"].(map[string]any)[n], perSec("end_to_end/"+n), "%s %s", name, n)
		require.Equal(t, tr["end_to_end_concurrent_per_sec"].(map[string]any)[n], perSec("end_to_end_concurrent/"+n), "%s %s", name, n)
	}
}

// requireScale checks that a relq backend's scale phase reports a slowest call for each path
// and overall.
func requireScale(t *testing.T, name string, raw any) {
	t.Helper()
	require.NotNil(t, raw, "%s: no scale phase", name)
	sc := raw.(map[string]any)
	if note, ok := sc["note"]; ok {
		t.Logf("%s: scale phase without figures: %v", name, note) // a server refusing CONFIG
		return
	}
	ops := sc["ops"].([]any)
	require.NotEmpty(t, ops, name)
	for _, op := range ops {
		o := op.(map[string]any)
		require.NotEmpty(t, o["slowest"].(map[string]any)["command"], "%s %v", name, o["name"])
	}
	slowest := sc["slowest"].(map[string]any)
	require.NotEmpty(t, slowest["op"], name)
	require.NotEmpty(t, slowest["command"], name)
	require.Equal(t, sc["topics"], sc["topics_found"], "%s: Topics lists every topic", name)
}

// TestBenchRefusesMiniredis: with no REDIS_URL and no redis-server, bench says why it will
// not run instead of measuring the embedded miniredis.
func TestBenchRefusesMiniredis(t *testing.T) {
	t.Parallel()
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	var out, errOut bytes.Buffer
	env := Env{Out: &out, Err: &errOut, Getenv: func(string) string { return "" }, LookPath: noPath}
	require.Equal(t, 1, Main(context.Background(), []string{"bench", "--quick"}, env))
	require.Contains(t, errOut.String(), "miniredis is not a fair server for benchmarks")
	require.Empty(t, out.String())
}

// bench --partitions measures every backend on a Cluster: the busiest primary's share, the
// ceilings, ordered against unordered, and the takeover; --json carries every figure.
func TestBenchPartitionsOnACluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: -1})
	url := "redis://" + cluster.Addrs()[0]
	code, out := runCLI(t, Env{Getenv: func(string) string { return "" }}, "bench", "--partitions", "6", "--quick", "--json", "--redis-url", url)
	require.Equal(t, 0, code, out)
	var rep struct {
		Primaries int `json:"primaries"`
		Backends  []struct {
			Backend  string  `json:"backend"`
			Takeover float64 `json:"takeover_ns"`
			Spread   struct {
				Partitions int              `json:"partitions"`
				Primaries  []map[string]any `json:"primaries"`
			} `json:"partitioned"`
			Ordered struct {
				Ordered bool `json:"ordered"`
			} `json:"partitioned_ordered"`
		} `json:"backends"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, 3, rep.Primaries)
	require.Len(t, rep.Backends, 3)
	for _, b := range rep.Backends {
		require.Equal(t, 6, b.Spread.Partitions, b.Backend)
		require.Len(t, b.Spread.Primaries, 3, b.Backend)
		for _, p := range b.Spread.Primaries {
			require.Greater(t, p["commands_per_msg"], 0.0, "%s: every primary served some of the topic", b.Backend)
		}
		require.True(t, b.Ordered.Ordered, b.Backend)
		require.Greater(t, b.Takeover, 0.0, b.Backend)
	}

	code, out = runCLI(t, Env{Getenv: func(string) string { return "" }}, "bench", "--partitions", "6", "--quick", "--redis-url", url)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^\s+list\s+busiest share \d+% \(target <= 40%\): (met|missed)`, out)
	require.Contains(t, out, "ordered / unordered per message")
}
