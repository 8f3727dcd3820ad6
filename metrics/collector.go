package metrics

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/partition"
)

const (
	// NamespaceDefault starts every metric name: relq_ready, relq_stats_up, ...
	NamespaceDefault = "relq"
	// TimeoutDefault bounds one scrape: half of Prometheus's default scrape_timeout (10s), so
	// a slow Redis shows as relq_stats_up 0 instead of a failed scrape.
	TimeoutDefault = 5 * time.Second
)

// CollectorConfig configures NewCollector.
type CollectorConfig struct {
	// Backends are read at every scrape, concurrently. Their series are labelled
	// backend=<Backend.Name()>, so the names must differ: to watch two backends of one kind
	// (two key prefixes, two Redis servers), register one Collector for each, told apart by
	// ConstLabels. Required.
	Backends []backend.Backend
	// Topics are the topics reported, with every group of each. When empty, every backend
	// must implement backend.TopicLister and its topics are discovered at each scrape, so new
	// topics appear without a restart (at the cost of a SCAN per scrape).
	Topics []string
	// Namespace starts every metric name. Defaults to NamespaceDefault ("relq").
	Namespace string
	// Timeout bounds one scrape: a backend not read by then reports relq_stats_up 0.
	// Defaults to TimeoutDefault (5s).
	Timeout time.Duration
	// ConstLabels are added to every series, to tell apart collectors that would otherwise
	// report the same series (e.g. {"prefix": "billing"}). They must not be named backend,
	// topic, group or policy.
	ConstLabels prometheus.Labels
	// Logger is told when a backend becomes unreadable and when it is read again: once per
	// change, not at every failed scrape. Defaults to discarding.
	Logger watermill.LoggerAdapter
}

// WithDefaults returns the config with its zero fields set to their defaults.
func (c CollectorConfig) WithDefaults() CollectorConfig {
	if c.Namespace == "" {
		c.Namespace = NamespaceDefault
	}
	if c.Timeout == 0 {
		c.Timeout = TimeoutDefault
	}
	if c.Logger == nil {
		c.Logger = watermill.NopLogger{}
	}
	return c
}

// metricNameRE is the classic Prometheus name syntax, which needs no quoting in PromQL.
var metricNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// reservedLabels are the collector's own variable labels of the per-group series;
// policyLabel is the one of relq_redis_evicts_queue_keys.
var (
	reservedLabels = []string{"backend", "topic", "group"}
	policyLabel    = "policy"
)

func (c CollectorConfig) validate() error {
	if len(c.Backends) == 0 {
		return &backend.ConfigError{Field: "Backends", Reason: "must not be empty"}
	}
	names := make(map[string]bool, len(c.Backends))
	for i, b := range c.Backends {
		if b == nil {
			return &backend.ConfigError{Field: "Backends", Reason: fmt.Sprintf("[%d] is nil", i)}
		}
		if names[b.Name()] {
			return &backend.ConfigError{Field: "Backends", Reason: fmt.Sprintf(
				"holds two %q backends, whose series would collide; use one Collector each, with distinct ConstLabels", b.Name())}
		}
		names[b.Name()] = true
		if _, ok := b.(backend.TopicLister); !ok && len(c.Topics) == 0 {
			return &backend.ConfigError{Field: "Topics", Reason: fmt.Sprintf(
				"is empty and the %s backend cannot list its topics (backend.TopicLister); name them", b.Name())}
		}
	}
	seen := make(map[string]bool, len(c.Topics))
	for _, t := range c.Topics {
		if err := backend.ValidateName("topic", t); err != nil {
			return &backend.ConfigError{Field: "Topics", Reason: err.Error()}
		}
		if seen[t] {
			return &backend.ConfigError{Field: "Topics", Reason: fmt.Sprintf("lists %q twice", t)}
		}
		seen[t] = true
	}
	if !metricNameRE.MatchString(c.Namespace) {
		return &backend.ConfigError{Field: "Namespace", Reason: fmt.Sprintf("%q is not a metric name prefix (letters, digits, _)", c.Namespace)}
	}
	if c.Timeout < 0 {
		return &backend.ConfigError{Field: "Timeout", Reason: "must not be negative"}
	}
	for _, l := range append(slices.Clone(reservedLabels), policyLabel) {
		if _, ok := c.ConstLabels[l]; ok {
			return &backend.ConfigError{Field: "ConstLabels", Reason: fmt.Sprintf("must not set %q, a label of the collector's own", l)}
		}
	}
	return nil
}

// stat is one per-group series: its name after the namespace, its help and how to read it.
type stat struct {
	name  string
	help  string
	typ   prometheus.ValueType
	value func(*backend.Stats) float64
	// absent, when set, leaves the series out for a group where it is true: a time that
	// never came, which 0 would show as 1970.
	absent func(*backend.Stats) bool
}

var stats = []stat{
	gauge("ready", "Messages due and waiting to be claimed by the group.", func(s *backend.Stats) int64 { return s.Ready }),
	gauge("delayed", "Messages waiting for their due time: delayed publishes and nack backoff.", func(s *backend.Stats) int64 { return s.Delayed }),
	gauge("pending", "Deliveries claimed by a consumer and not yet acked or nacked (in flight).", func(s *backend.Stats) int64 { return s.Pending }),
	gauge("dead", "Messages in the group's dead-letter store, never delivered again until requeued.", func(s *backend.Stats) int64 { return s.Dead }),
	{name: "oldest_pending_age_seconds", help: "Time since the oldest pending delivery was claimed; 0 when none is pending.",
		typ: prometheus.GaugeValue, value: func(s *backend.Stats) float64 { return s.OldestPendingAge.Seconds() }},
	{name: "oldest_ready_age_seconds", help: "Time the oldest ready message has waited to be claimed; 0 when none is ready.",
		typ: prometheus.GaugeValue, value: func(s *backend.Stats) float64 { return s.OldestReadyAge.Seconds() }},
	counter("published_total", "Messages published and routed to the group.", func(c *backend.Counters) int64 { return c.Published }),
	counter("claimed_total", "Deliveries claimed by the group's consumers, redeliveries included.", func(c *backend.Counters) int64 { return c.Claimed }),
	counter("acked_total", "Deliveries acked: removed from pending, done.", func(c *backend.Counters) int64 { return c.Acked }),
	counter("nacked_total", "Deliveries nacked by the consumer holding them: retried or dead-lettered.", func(c *backend.Counters) int64 { return c.Nacked }),
	counter("reclaimed_total", "Expired leases returned to ready: a consumer died or stalled past its lease.", func(c *backend.Counters) int64 { return c.Reclaimed }),
	counter("dead_lettered_total", "Messages moved to the dead-letter store.", func(c *backend.Counters) int64 { return c.DeadLettered }),
	counter("stale_acks_total", "Acks from a consumer that no longer held that attempt (its lease had expired).", func(c *backend.Counters) int64 { return c.StaleAcks }),
	counter("stale_nacks_total", "Nacks ignored because the consumer no longer held that attempt.", func(c *backend.Counters) int64 { return c.StaleNacks }),
	counter("reregistered_total", "Times a running subscription registered the group again after its state vanished from Redis (a restart without persistence, a failover, FLUSHALL, keys deleted by another client).",
		func(c *backend.Counters) int64 { return c.Reregistered }),
	{name: "reregistered_timestamp_seconds", help: "When the group was last registered again after its state vanished (Unix time, Redis clock); absent if never.",
		typ: prometheus.GaugeValue, value: func(s *backend.Stats) float64 { return float64(s.ReregisteredAt.UnixMilli()) / 1000 },
		absent: func(s *backend.Stats) bool { return s.ReregisteredAt.IsZero() }},
}

func gauge(name, help string, v func(*backend.Stats) int64) stat {
	return stat{name: name, help: help, typ: prometheus.GaugeValue, value: func(s *backend.Stats) float64 { return float64(v(s)) }}
}

func counter(name, help string, v func(*backend.Counters) int64) stat {
	return stat{name: name, help: help, typ: prometheus.CounterValue, value: func(s *backend.Stats) float64 { return float64(v(&s.Counters)) }}
}

// Collector is a prometheus.Collector that reads relq's stats from Redis at each scrape.
// It keeps no state between scrapes beyond each backend's health (for logging), so every
// replica of an application may register one: they all report the same numbers, which
// dashboards should aggregate with max, not sum.
type Collector struct {
	cfg      CollectorConfig
	sources  []*source
	descs    []*prometheus.Desc // one per stats entry
	up       *prometheus.Desc
	duration *prometheus.Desc
	evicts   *prometheus.Desc // relq_redis_evicts_queue_keys
	evicted  *prometheus.Desc // relq_redis_evicted_keys_total
	dropped  *prometheus.Desc // relq_topic_backlog_dropped_total
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector over cfg.Backends. It fails with a *backend.ConfigError
// naming the invalid field, including label names Prometheus would reject at registration.
func NewCollector(cfg CollectorConfig) (*Collector, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Backends = slices.Clone(cfg.Backends)
	cfg.Topics = slices.Clone(cfg.Topics)
	c := &Collector{cfg: cfg}
	for _, b := range cfg.Backends {
		b = partition.Open(b) // a topic created with partitions is one topic, its counts added up
		s := &source{backend: b}
		if lister, ok := b.(backend.TopicLister); ok && len(cfg.Topics) == 0 {
			s.lister = lister
		}
		s.admin, _ = b.(backend.Admin)
		s.healthy.Store(true) // so that the first failure is logged
		c.sources = append(c.sources, s)
	}
	name := func(n string) string { return prometheus.BuildFQName(cfg.Namespace, "", n) }
	for _, st := range stats {
		c.descs = append(c.descs, prometheus.NewDesc(name(st.name), st.help, reservedLabels, cfg.ConstLabels))
	}
	c.up = prometheus.NewDesc(name("stats_up"),
		"1 if the backend's stats were read at this scrape; 0 if not (Redis down, timeout, error), and its other series are then absent.",
		[]string{"backend"}, cfg.ConstLabels)
	c.duration = prometheus.NewDesc(name("stats_scrape_duration_seconds"),
		"Time taken to read the backend's stats at this scrape.", []string{"backend"}, cfg.ConstLabels)
	c.evicts = prometheus.NewDesc(name("redis_evicts_queue_keys"),
		"1 if Redis's maxmemory-policy (label policy) lets a full Redis evict relq's queue keys, losing their messages without an error (allkeys-*); 0 if not. Absent when Redis does not say (INFO refused).",
		[]string{"backend", policyLabel}, cfg.ConstLabels)
	c.evicted = prometheus.NewDesc(name("redis_evicted_keys_total"),
		"Keys Redis evicted since it started (INFO evicted_keys), relq's or not. Absent when Redis does not say.",
		[]string{"backend"}, cfg.ConstLabels)
	c.dropped = prometheus.NewDesc(name("topic_backlog_dropped_total"),
		"Messages the topic's backlog dropped, the oldest first, to stay within its limit while the topic had no group: no group received them. Absent for a backend without the Admin API.",
		[]string{"backend", "topic"}, cfg.ConstLabels)
	// Prometheus reports a bad label name only when the collector is registered; check here
	// so that the error names the field.
	if err := prometheus.NewPedanticRegistry().Register(c); err != nil {
		return nil, &backend.ConfigError{Field: "ConstLabels", Reason: err.Error()}
	}
	return c, nil
}

// Describe sends the descriptors of every metric the collector may report.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.up
	ch <- c.duration
	ch <- c.evicts
	ch <- c.evicted
	ch <- c.dropped
}

// result is what one backend's read produced.
type result struct {
	topics   []backend.TopicInfo
	stats    []backend.Stats
	eviction *backend.Eviction // nil: the backend cannot read it
	err      error
	took     time.Duration
}

// Collect reads every backend concurrently and reports what was read within the timeout.
// A read still running at the timeout is abandoned (its context is cancelled), so a Redis
// client that does not honour contexts cannot make the scrape hang.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	start := time.Now()
	done := make([]chan result, len(c.sources))
	for i, s := range c.sources {
		// Buffered, so that an abandoned read can finish without a receiver.
		out := make(chan result, 1)
		done[i] = out
		go func() {
			r := s.read(ctx, c.cfg.Topics)
			r.took = time.Since(start)
			out <- r
		}()
	}
	for i, s := range c.sources {
		var r result
		select {
		case r = <-done[i]:
		case <-ctx.Done():
			select {
			case r = <-done[i]: // finished at the deadline: use it
			default:
				r = result{err: fmt.Errorf("not read within %v: %w", c.cfg.Timeout, context.DeadlineExceeded), took: c.cfg.Timeout}
			}
		}
		c.report(ch, s, r)
	}
}

// report sends one backend's series, or only its up 0 when it could not be read: a partial
// set would look like topics or groups that vanished.
func (c *Collector) report(ch chan<- prometheus.Metric, s *source, r result) {
	name := s.backend.Name()
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, r.took.Seconds(), name)
	if r.err != nil {
		if s.healthy.Swap(false) {
			c.cfg.Logger.Error("relq metrics: cannot read stats; reporting stats_up 0 until it can", r.err,
				watermill.LogFields{"backend": name})
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0, name)
		return
	}
	if !s.healthy.Swap(true) {
		c.cfg.Logger.Info("relq metrics: reading stats again", watermill.LogFields{"backend": name})
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1, name)
	c.reportEviction(ch, s, r.eviction)
	// Topic and group names passed ValidateName (printable ASCII), so they are valid label
	// values and MustNewConstMetric cannot panic.
	if s.admin != nil {
		for _, t := range r.topics {
			ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(t.BacklogDropped), name, t.Name)
		}
	}
	for i := range r.stats {
		st := &r.stats[i]
		for j, m := range stats {
			if m.absent == nil || !m.absent(st) {
				ch <- prometheus.MustNewConstMetric(c.descs[j], m.typ, m.value(st), name, st.Topic, st.Group)
			}
		}
	}
}

// reportEviction sends the eviction series of a backend that can read them, and logs at
// error level, once per change, a policy that drops queue keys.
func (c *Collector) reportEviction(ch chan<- prometheus.Metric, s *source, ev *backend.Eviction) {
	if ev == nil {
		return
	}
	name := s.backend.Name()
	if ev.Policy != "" {
		unsafe := 0.0
		if err := ev.Err(); err != nil {
			unsafe = 1
			if !s.evicting.Swap(true) {
				c.cfg.Logger.Error("relq metrics: Redis can evict queue keys", err,
					watermill.LogFields{"backend": name, "maxmemory_policy": ev.Policy})
			}
		} else {
			s.evicting.Store(false)
		}
		ch <- prometheus.MustNewConstMetric(c.evicts, prometheus.GaugeValue, unsafe, name, ev.Policy)
	}
	if ev.EvictedKeys >= 0 {
		ch <- prometheus.MustNewConstMetric(c.evicted, prometheus.CounterValue, float64(ev.EvictedKeys), name)
	}
}
