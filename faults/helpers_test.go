package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/seal"
	"github.com/relq/relq/pubsub"
)

// settleTimeout bounds every wait for the system to catch up after a fault. It is generous:
// the tests run under -race on small machines, and only a failing test waits that long.
const settleTimeout = 2 * time.Minute

// faultLogger is silent unless RELQ_TEST_LOG is set, so that the Redis errors every
// subscriber logs during an outage do not bury the test output.
var faultLogger watermill.LoggerAdapter = func() watermill.LoggerAdapter {
	if os.Getenv("RELQ_TEST_LOG") != "" {
		return watermill.NewStdLogger(false, false)
	}
	return watermill.NopLogger{}
}()

// quietRedis drops go-redis's own log lines ("failed to dial ... connection refused"), which
// every client prints many times while a scenario has Redis down. RELQ_TEST_LOG keeps them.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() {
	if os.Getenv("RELQ_TEST_LOG") == "" {
		redis.SetLogger(quietRedis{})
	}
}

// corruptInjector is what the scenarios need of each backend's Faults.
type corruptInjector interface {
	InjectCorrupt(ctx context.Context, topic, group string, data []byte) error
}

// backendCase builds one backend on a client under a key prefix, with the backlog bounds a
// conformance test asks for (conformance.Options.BacklogLimit, BacklogTTL; zero: defaults).
type backendCase struct {
	name string
	new  func(c redis.UniversalClient, prefix string, opts conformance.Options) (backend.Backend, corruptInjector, error)
}

// faultBackends are the backends every scenario runs against. The worker program
// (internal/worker) builds the same ones by name.
var faultBackends = []backendCase{
	{"list", func(c redis.UniversalClient, prefix string, opts conformance.Options) (backend.Backend, corruptInjector, error) {
		b, err := list.New(c, list.Options{Prefix: prefix, BacklogLimit: opts.BacklogLimit, BacklogTTL: opts.BacklogTTL, TombstoneTTL: opts.TombstoneTTL, BacklogFull: opts.BacklogFull})
		if err != nil {
			return nil, nil, err
		}
		return b, seal.Open(b), nil
	}},
	{"zset", func(c redis.UniversalClient, prefix string, opts conformance.Options) (backend.Backend, corruptInjector, error) {
		b, err := zset.New(c, zset.Options{Prefix: prefix, BacklogLimit: opts.BacklogLimit, BacklogTTL: opts.BacklogTTL, TombstoneTTL: opts.TombstoneTTL, BacklogFull: opts.BacklogFull})
		if err != nil {
			return nil, nil, err
		}
		return b, seal.Open(b), nil
	}},
	{"streams", func(c redis.UniversalClient, prefix string, opts conformance.Options) (backend.Backend, corruptInjector, error) {
		b, err := streams.New(c, streams.Options{Prefix: prefix, BacklogLimit: opts.BacklogLimit, BacklogTTL: opts.BacklogTTL, TombstoneTTL: opts.TombstoneTTL, BacklogFull: opts.BacklogFull})
		if err != nil {
			return nil, nil, err
		}
		return b, seal.Open(b), nil
	}},
}

// newFaultBackend returns bc's backend on c, failing t on a config error.
func newFaultBackend(t *testing.T, bc backendCase, c redis.UniversalClient, prefix string) (backend.Backend, corruptInjector) {
	t.Helper()
	b, f, err := bc.new(c, prefix, conformance.Options{})
	require.NoError(t, err)
	return b, f
}

// newConformanceBackend is newFaultBackend with the backlog bounds of opts, closed when t
// ends: after what the conformance suite started on it, and before c when c was made earlier
// in t.
func newConformanceBackend(t *testing.T, bc backendCase, c redis.UniversalClient, prefix string, opts conformance.Options) (backend.Backend, corruptInjector) {
	t.Helper()
	b, f, err := bc.new(c, prefix, opts)
	require.NoError(t, err)
	if closer, ok := b.(io.Closer); ok {
		t.Cleanup(func() { _ = closer.Close() })
	}
	return b, f
}

// newFaultSubscriber returns a subscriber closed when t ends.
func newFaultSubscriber(t *testing.T, b backend.Backend, cfg pubsub.SubscriberConfig) *pubsub.Subscriber {
	t.Helper()
	sub, err := pubsub.NewSubscriber(b, cfg, faultLogger)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sub.Close()) })
	return sub
}

// scale picks the short or the full-scale figure (build tag faults_full).
func scale(short, fullScale int) int {
	if full {
		return fullScale
	}
	return short
}

// faultTopic returns a fresh topic name.
func faultTopic() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "faults-" + hex.EncodeToString(b[:])
}

// faultMessages returns n messages with fresh UUIDs.
func faultMessages(n int) []*message.Message {
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), []byte(strconv.Itoa(i)))
	}
	return msgs
}

// pollUntil calls cond every 20ms until it is true or timeout passed, and reports whether
// it became true.
func pollUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSettled polls the group's Stats until nothing is ready, delayed or pending, and
// returns the last Stats read.
func waitSettled(t *testing.T, b backend.Backend, topic string) backend.Stats {
	t.Helper()
	return waitSettledGroup(t, b, topic, backend.DefaultGroup)
}

// waitSettledGroup is waitSettled for the given group.
func waitSettledGroup(t *testing.T, b backend.Backend, topic, group string) backend.Stats {
	t.Helper()
	var (
		st  backend.Stats
		err error
	)
	ok := pollUntil(settleTimeout, func() bool {
		st, err = b.Stats(context.Background(), &backend.StatsParams{Topic: topic, Group: group})
		return err == nil && st.Ready == 0 && st.Delayed == 0 && st.Pending == 0
	})
	require.NoError(t, err)
	require.True(t, ok, "group %s did not settle within %v: %+v", group, settleTimeout, st)
	return st
}

// tally counts handlings per message UUID; safe for concurrent use.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func newTally() *tally { return &tally{n: make(map[string]int)} }

func (c *tally) add(uuid string) {
	c.mu.Lock()
	c.n[uuid]++
	c.mu.Unlock()
}

// distinct returns how many different messages were handled.
func (c *tally) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.n)
}

// count returns the handlings of one message.
func (c *tally) count(uuid string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[uuid]
}

// duplicates returns the handlings beyond the first of each message.
func (c *tally) duplicates() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := 0
	for _, n := range c.n {
		d += n - 1
	}
	return d
}

// missing returns the UUIDs of want never handled.
func (c *tally) missing(want []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, u := range want {
		if c.n[u] == 0 {
			out = append(out, u)
		}
	}
	return out
}

// median and maximum of a sample (zero for none).
func medianMax(ds []time.Duration) (med, mx time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

// firstFew returns at most n elements, for failure messages.
func firstFew[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// forReplicationModes runs a failover scenario twice, in parallel: "Async" publishes without
// waiting for replicas (waitReplicas 0), "WaitReplicas" with PublisherConfig.WaitReplicas 1.
func forReplicationModes(t *testing.T, run func(t *testing.T, waitReplicas int)) {
	for _, mode := range []struct {
		name         string
		waitReplicas int
	}{{"Async", 0}, {"WaitReplicas", 1}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			run(t, mode.waitReplicas)
		})
	}
}
