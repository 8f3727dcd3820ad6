package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/metrics"
	"github.com/relq/relq/partition"
	"github.com/relq/relq/pubsub"
)

// adapters builds each backend under a key prefix.
var adapters = []struct {
	name string
	new  func(c redis.UniversalClient, prefix string) (backend.Backend, error)
}{
	{"list", func(c redis.UniversalClient, p string) (backend.Backend, error) {
		return list.New(c, list.Options{Prefix: p})
	}},
	{"zset", func(c redis.UniversalClient, p string) (backend.Backend, error) {
		return zset.New(c, zset.Options{Prefix: p})
	}},
	{"streams", func(c redis.UniversalClient, p string) (backend.Backend, error) {
		return streams.New(c, streams.Options{Prefix: p})
	}},
}

// newBackend returns the named adapter on the shared server, under a prefix of t's own.
func newBackend(t *testing.T, name string) backend.Backend {
	t.Helper()
	return newBackendOn(t, redistest.Shared(t).Client(t), name)
}

func newBackendOn(t *testing.T, c redis.UniversalClient, name string) backend.Backend {
	t.Helper()
	for _, a := range adapters {
		if a.name == name {
			b, err := a.new(c, redistest.Prefix(t))
			require.NoError(t, err)
			return b
		}
	}
	t.Fatalf("no adapter %q", name)
	return nil
}

// subscribed registers backend.DefaultGroup on topic, as a subscriber would, so what is
// published there is routed to it (rather than to the topic's backlog).
func subscribed(t *testing.T, b backend.Backend, topic string) {
	t.Helper()
	require.NoError(t, b.EnsureGroup(context.Background(), &backend.EnsureGroupParams{Topic: topic, Group: backend.DefaultGroup}))
}

// publish publishes n messages to topic through the Watermill publisher, delayed by delay.
func publish(t *testing.T, b backend.Backend, topic string, n int, delay time.Duration) {
	t.Helper()
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), []byte(fmt.Sprintf("%s-%d", topic, i)))
		if delay > 0 {
			pubsub.SetDelay(msgs[i], delay)
		}
	}
	require.NoError(t, pub.Publish(topic, msgs...))
}

func claim(t *testing.T, b backend.Backend, topic, group string, n int, lease time.Duration) []backend.Delivery {
	t.Helper()
	ds, err := b.Claim(context.Background(), &backend.ClaimParams{Topic: topic, Group: group, Consumer: "c1", Count: n, Lease: lease})
	require.NoError(t, err)
	require.Len(t, ds, n)
	return ds
}

func nack(t *testing.T, b backend.Backend, topic, group string, item backend.NackItem) backend.NackResult {
	t.Helper()
	r, err := b.Nack(context.Background(), &backend.NackParams{Topic: topic, Group: group, Consumer: "c1", Items: []backend.NackItem{item}})
	require.NoError(t, err)
	return r
}

// fill leaves a known state behind, where every counter has its own pair of values in
// orders/workers and orders/audit, so two swapped counters would show:
//
//	orders/workers  ready 0, delayed 1, pending 1, dead 1: 5 claimed, 3 acked, 1 nacked to
//	                the dead letters, 2 stale nacks by the consumer that had acked
//	orders/audit    ready 5, delayed 1: 2 claimed under a 1 ms lease and reclaimed, 1 claimed
//	                again and nacked back to ready
//	emails/default  ready 2
func fill(t *testing.T, b backend.Backend) {
	t.Helper()
	ctx := context.Background()
	for _, g := range []string{"workers", "audit"} {
		require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: g}))
	}
	publish(t, b, "orders", 5, 0)
	publish(t, b, "orders", 1, time.Hour)
	subscribed(t, b, "emails")
	publish(t, b, "emails", 2, 0)

	d := claim(t, b, "orders", "workers", 5, time.Minute)
	acked, err := b.Ack(ctx, &backend.AckParams{Topic: "orders", Group: "workers", Consumer: "c1",
		Items: []backend.Held{{ID: d[0].ID, Attempt: 1}, {ID: d[1].ID, Attempt: 1}, {ID: d[2].ID, Attempt: 1}}})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Acked: 3}, acked)
	require.Equal(t, backend.NackResult{DeadLettered: 1},
		nack(t, b, "orders", "workers", backend.NackItem{ID: d[3].ID, Attempt: 1, DeadLetter: true, Reason: "bad order"}))
	for _, i := range []int{0, 1} {
		require.Equal(t, backend.NackResult{Stale: 1}, nack(t, b, "orders", "workers", backend.NackItem{ID: d[i].ID, Attempt: 1}))
	}

	claim(t, b, "orders", "audit", 2, time.Millisecond)
	reclaimed := 0
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r, err := b.Reclaim(ctx, &backend.ReclaimParams{Topic: "orders", Group: "audit", OrphanLease: time.Minute})
		require.NoError(c, err)
		reclaimed += r.Reclaimed
		require.Equal(c, 2, reclaimed, "the 1 ms leases should expire and be reclaimed")
	}, 10*time.Second, 5*time.Millisecond)
	again := claim(t, b, "orders", "audit", 1, time.Minute)
	require.Equal(t, backend.NackResult{Requeued: 1},
		nack(t, b, "orders", "audit", backend.NackItem{ID: again[0].ID, Attempt: again[0].Attempt}))
}

// gather registers c in a pedantic registry (which checks what Collect sends against
// Describe) and returns every sample as `name{label="value",...}` → value.
func gather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			default:
				t.Fatalf("%s is neither a gauge nor a counter", key)
			}
		}
	}
	return out
}

// takeAge removes an age or duration sample from m and checks it is a plausible number of
// seconds: not negative, and far below an hour (milliseconds reported as seconds would not be).
func takeAge(t *testing.T, m map[string]float64, key string) {
	t.Helper()
	v, ok := m[key]
	require.True(t, ok, "missing %s", key)
	require.GreaterOrEqual(t, v, 0.0, key)
	require.Less(t, v, 3600.0, key)
	delete(m, key)
}

// groupSeries returns the expected samples of one group, with both ages 0.
func groupSeries(backend, topic, group string, ready, delayed, pending, dead int, c backend.Counters) map[string]float64 {
	l := fmt.Sprintf(`{backend=%q,group=%q,topic=%q}`, backend, group, topic)
	return map[string]float64{
		"relq_ready" + l:                      float64(ready),
		"relq_delayed" + l:                    float64(delayed),
		"relq_pending" + l:                    float64(pending),
		"relq_dead" + l:                       float64(dead),
		"relq_oldest_pending_age_seconds" + l: 0,
		"relq_oldest_ready_age_seconds" + l:   0,
		"relq_published_total" + l:            float64(c.Published),
		"relq_claimed_total" + l:              float64(c.Claimed),
		"relq_acked_total" + l:                float64(c.Acked),
		"relq_nacked_total" + l:               float64(c.Nacked),
		"relq_reclaimed_total" + l:            float64(c.Reclaimed),
		"relq_dead_lettered_total" + l:        float64(c.DeadLettered),
		"relq_stale_acks_total" + l:           float64(c.StaleAcks),
		"relq_stale_nacks_total" + l:          float64(c.StaleNacks),
		"relq_reregistered_total" + l:         float64(c.Reregistered),
	}
}

// Every adapter reports the exact state it was brought to, per topic and group, and a topic
// that does not exist reports nothing.
//
// On topics created with partitions (4 and 3 here), the collector, given the plain adapter,
// reports each as one topic with the counts of its partitions added up: the same series.
func TestCollectorReportsStats(t *testing.T) {
	t.Parallel()
	for _, a := range adapters {
		for _, partitioned := range []bool{false, true} {
			name := a.name
			if partitioned {
				name += "/partitioned"
			}
			t.Run(name, func(t *testing.T) { testCollectorReportsStats(t, a.name, partitioned) })
		}
	}
}

func testCollectorReportsStats(t *testing.T, adapter string, partitioned bool) {
	t.Parallel()
	b := newBackend(t, adapter)
	if partitioned {
		ctx := context.Background()
		require.NoError(t, partition.Create(ctx, b, "orders", 4))
		require.NoError(t, partition.Create(ctx, b, "emails", 3))
		fill(t, partition.Open(b))
	} else {
		fill(t, b)
	}
	c, err := metrics.NewCollector(metrics.CollectorConfig{
		Backends: []backend.Backend{b},
		Topics:   []string{"orders", "emails", "missing"},
	})
	require.NoError(t, err)

	n := adapter
	want := map[string]float64{
		fmt.Sprintf(`relq_stats_up{backend=%q}`, n):                                    1,
		fmt.Sprintf(`relq_redis_evicts_queue_keys{backend=%q,policy="noeviction"}`, n): 0,
		fmt.Sprintf(`relq_redis_evicted_keys_total{backend=%q}`, n):                    0,
		fmt.Sprintf(`relq_topic_backlog_dropped_total{backend=%q,topic="emails"}`, n):  0,
		fmt.Sprintf(`relq_topic_backlog_dropped_total{backend=%q,topic="orders"}`, n):  0,
	}
	for _, g := range []map[string]float64{
		groupSeries(n, "orders", "workers", 0, 1, 1, 1,
			backend.Counters{Published: 6, Claimed: 5, Acked: 3, Nacked: 1, DeadLettered: 1, StaleNacks: 2}),
		groupSeries(n, "orders", "audit", 5, 1, 0, 0,
			backend.Counters{Published: 6, Claimed: 3, Nacked: 1, Reclaimed: 2}),
		groupSeries(n, "emails", "default", 2, 0, 0, 0, backend.Counters{Published: 2}),
	} {
		maps.Copy(want, g)
	}
	got := gather(t, c)
	// Ages run on the Redis clock: where something is ready or pending only their
	// presence and unit are checked; elsewhere they are exactly 0, as in want.
	l := func(topic, group string) string {
		return fmt.Sprintf(`{backend=%q,group=%q,topic=%q}`, n, group, topic)
	}
	for _, k := range []string{
		"relq_oldest_pending_age_seconds" + l("orders", "workers"),
		"relq_oldest_ready_age_seconds" + l("orders", "audit"),
		"relq_oldest_ready_age_seconds" + l("emails", "default"),
	} {
		takeAge(t, got, k)
		delete(want, k)
	}
	takeAge(t, got, fmt.Sprintf(`relq_stats_scrape_duration_seconds{backend=%q}`, n))
	require.Equal(t, want, got)

	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// topicLister gives a backend that cannot list its topics yet the ability, from a list the
// test keeps up to date, so discovery is tested whether or not the adapter implements it.
type topicLister struct {
	backend.Backend
	mu     *sync.Mutex
	topics *[]string
}

func (l topicLister) TopicNames(context.Context) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(*l.topics), nil
}

// With no Topics configured, topics are discovered at each scrape: one published after the
// collector was made appears at the next scrape.
func TestCollectorDiscoversTopics(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		topics = []string{"a"}
	)
	zb := newBackend(t, "zset")
	b := zb
	if _, ok := b.(backend.TopicLister); !ok {
		b = topicLister{Backend: zb, mu: &mu, topics: &topics}
	}
	subscribed(t, zb, "a")
	publish(t, zb, "a", 1, 0)
	c, err := metrics.NewCollector(metrics.CollectorConfig{Backends: []backend.Backend{b}})
	require.NoError(t, err)
	require.Equal(t, 1.0, gather(t, c)[`relq_ready{backend="zset",group="default",topic="a"}`])
	require.Equal(t, 1, testutil.CollectAndCount(c, "relq_ready"))

	subscribed(t, zb, "b")
	publish(t, zb, "b", 2, 0)
	mu.Lock()
	topics = append(topics, "b")
	mu.Unlock()
	got := gather(t, c)
	require.Equal(t, 1.0, got[`relq_ready{backend="zset",group="default",topic="a"}`])
	require.Equal(t, 2.0, got[`relq_ready{backend="zset",group="default",topic="b"}`])
	require.Equal(t, 2, testutil.CollectAndCount(c, "relq_ready"))
}

// With Redis stopped, every backend reports stats_up 0 and no other series, the scrape
// itself succeeds, and the failure is logged once; when Redis is back, so are the series.
func TestCollectorRedisDown(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{AOF: true})
	// Fail fast when Redis is down: go-redis's default dial and command retries take about
	// 3 s per scrape, which only slows the test down (Timeout would cap them anyway).
	opt, err := redis.ParseURL(s.URL())
	require.NoError(t, err)
	opt.MaxRetries, opt.DialerRetries = -1, 1
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	var backends []backend.Backend
	for _, a := range adapters {
		b := newBackendOn(t, client, a.name)
		subscribed(t, b, "orders")
		publish(t, b, "orders", 1, 0)
		backends = append(backends, b)
	}
	logger := watermill.NewCaptureLogger()
	c, err := metrics.NewCollector(metrics.CollectorConfig{Backends: backends, Topics: []string{"orders"}, Logger: logger})
	require.NoError(t, err)
	up := func(name string) string { return fmt.Sprintf(`relq_stats_up{backend=%q}`, name) }

	got := gather(t, c)
	for _, a := range adapters {
		require.Equal(t, 1.0, got[up(a.name)])
	}
	require.Equal(t, 3, testutil.CollectAndCount(c, "relq_ready"))

	require.NoError(t, s.Stop())
	for range 2 {
		got = gather(t, c)
		var names []string
		for k := range got {
			names = append(names, k[:strings.IndexByte(k, '{')])
		}
		slices.Sort(names)
		require.Equal(t, []string{
			"relq_stats_scrape_duration_seconds", "relq_stats_scrape_duration_seconds", "relq_stats_scrape_duration_seconds",
			"relq_stats_up", "relq_stats_up", "relq_stats_up",
		}, names)
		for _, a := range adapters {
			require.Equal(t, 0.0, got[up(a.name)])
		}
	}
	require.Len(t, logger.Captured()[watermill.ErrorLogLevel], 3, "one error per backend, not per scrape")

	require.NoError(t, s.Start())
	// go-redis keeps failing fast for a moment after repeated dial errors, as a later
	// Prometheus scrape would find: poll until every backend is read again.
	require.Eventually(t, func() bool {
		got = gather(t, c)
		return got[up("list")]+got[up("zset")]+got[up("streams")] == 3
	}, 20*time.Second, 50*time.Millisecond)
	for _, a := range adapters {
		require.Equal(t, 1.0, got[fmt.Sprintf(`relq_ready{backend=%q,group="default",topic="orders"}`, a.name)])
	}
	require.Len(t, logger.Captured()[watermill.InfoLogLevel], 3, "one recovery per backend")
}

// stuck is a backend whose reads never return until released, ignoring their context, like
// a Redis client that does not honour contexts talking to a hung server.
type stuck struct {
	backend.Backend // nil: only Name and Groups are called
	release         chan struct{}
}

func (stuck) Name() string { return "stuck" }

func (s stuck) GroupNames(context.Context, string) ([]string, error) {
	<-s.release
	return nil, errors.New("released")
}

// A backend that hangs costs the scrape its Timeout, not more: it reports stats_up 0 while
// the healthy backend next to it reports its series.
func TestCollectorTimeout(t *testing.T) {
	t.Parallel()
	hung := stuck{release: make(chan struct{})}
	t.Cleanup(func() { close(hung.release) })
	b := newBackend(t, "list")
	subscribed(t, b, "orders")
	publish(t, b, "orders", 2, 0)
	c, err := metrics.NewCollector(metrics.CollectorConfig{
		Backends: []backend.Backend{hung, b},
		Topics:   []string{"orders"},
		Timeout:  200 * time.Millisecond,
	})
	require.NoError(t, err)

	got := gather(t, c)
	require.Equal(t, 0.0, got[`relq_stats_up{backend="stuck"}`])
	require.Equal(t, 1.0, got[`relq_stats_up{backend="list"}`])
	require.Equal(t, 2.0, got[`relq_ready{backend="list",group="default",topic="orders"}`])
	require.Equal(t, 1, testutil.CollectAndCount(c, "relq_ready"))
}

// Each invalid field is named in a *backend.ConfigError.
func TestNewCollectorValidates(t *testing.T) {
	t.Parallel()
	b := newBackend(t, "list")
	for _, tc := range []struct {
		name  string
		cfg   metrics.CollectorConfig
		field string
	}{
		{"no backends", metrics.CollectorConfig{Topics: []string{"t"}}, "Backends"},
		{"nil backend", metrics.CollectorConfig{Backends: []backend.Backend{nil}, Topics: []string{"t"}}, "Backends"},
		{"same name twice", metrics.CollectorConfig{Backends: []backend.Backend{b, b}, Topics: []string{"t"}}, "Backends"},
		{"no topics, no lister", metrics.CollectorConfig{Backends: []backend.Backend{stuck{}}}, "Topics"},
		{"invalid topic", metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"a{b}"}}, "Topics"},
		{"topic twice", metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"t", "t"}}, "Topics"},
		{"namespace", metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"t"}, Namespace: "my-app"}, "Namespace"},
		{"negative timeout", metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"t"}, Timeout: -time.Second}, "Timeout"},
		{"reserved label", metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"t"},
			ConstLabels: prometheus.Labels{"topic": "x"}}, "ConstLabels"},
		{"eviction label", metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"t"},
			ConstLabels: prometheus.Labels{"policy": "x"}}, "ConstLabels"},
		{"invalid label", metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"t"},
			ConstLabels: prometheus.Labels{"__reserved": "x"}}, "ConstLabels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := metrics.NewCollector(tc.cfg)
			require.ErrorIs(t, err, backend.ErrInvalidConfig)
			var ce *backend.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field, err.Error())
		})
	}
}

// ConstLabels tell apart two collectors of the same kind of backend, so both register in one
// registry.
func TestCollectorConstLabels(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	for _, p := range []string{"billing", "mail"} {
		b := newBackend(t, "zset")
		subscribed(t, b, "orders")
		publish(t, b, "orders", 1, 0)
		c, err := metrics.NewCollector(metrics.CollectorConfig{
			Backends:    []backend.Backend{b},
			Topics:      []string{"orders"},
			Namespace:   "app_relq",
			ConstLabels: prometheus.Labels{"prefix": p},
		})
		require.NoError(t, err)
		require.NoError(t, reg.Register(c))
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP app_relq_ready Messages due and waiting to be claimed by the group.
# TYPE app_relq_ready gauge
app_relq_ready{backend="zset",group="default",prefix="billing",topic="orders"} 1
app_relq_ready{backend="zset",group="default",prefix="mail",topic="orders"} 1
`), "app_relq_ready"))
}

// Another program's consumer group on a streams topic, under a name relq does not accept,
// is left out; relq's own groups are still reported.
func TestCollectorSkipsForeignGroups(t *testing.T) {
	t.Parallel()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	b, err := streams.New(c, streams.Options{Prefix: prefix})
	require.NoError(t, err)
	require.NoError(t, b.EnsureGroup(context.Background(), &backend.EnsureGroupParams{Topic: "events", Group: backend.DefaultGroup}))
	publish(t, b, "events", 1, 0)
	stream := keys.Join(keys.Tag(prefix, "events"), "stream")
	require.NoError(t, c.XGroupCreate(context.Background(), stream, "other app", "0").Err())

	col, err := metrics.NewCollector(metrics.CollectorConfig{Backends: []backend.Backend{b}, Topics: []string{"events"}})
	require.NoError(t, err)
	m := gather(t, col)
	require.Equal(t, 1.0, m[`relq_stats_up{backend="streams"}`])
	require.Equal(t, 1.0, m[`relq_ready{backend="streams",group="default",topic="events"}`])
	for k := range m {
		require.NotContains(t, k, "other app")
	}
}

// A topic created with partitions is discovered as one topic, not as its partitions.
func TestCollectorDiscoversAPartitionedTopic(t *testing.T) {
	t.Parallel()
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, a.name)
			require.NoError(t, partition.Create(context.Background(), b, "p", 4))
			subscribed(t, partition.Open(b), "p")
			publish(t, b, "p", 8, 0)
			c, err := metrics.NewCollector(metrics.CollectorConfig{Backends: []backend.Backend{b}})
			require.NoError(t, err)
			require.Equal(t, 8.0, gather(t, c)[fmt.Sprintf(`relq_ready{backend=%q,group="default",topic="p"}`, a.name)])
			require.Equal(t, 1, testutil.CollectAndCount(c, "relq_ready"), "one series: the topic, not its partitions")
		})
	}
}
