package middleware_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	wm "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/middleware"
	"github.com/relq/relq/pubsub"
)

func metrics(t *testing.T, c middleware.MetricsConfig) message.HandlerMiddleware {
	t.Helper()
	mw, err := middleware.Metrics(c)
	require.NoError(t, err)
	return mw
}

// A handler that succeeds, fails, panics once and meets a duplicate: every delivery is
// counted by outcome, timed, and its attempt observed, labelled with handler and topic.
func TestMetricsThroughRouter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	var panicked sync.Once
	r := newRouter(t,
		metrics(t, middleware.MetricsConfig{Registerer: reg}),
		idempotent(t, middleware.IdempotentConfig{Client: e.client, Prefix: e.prefix}))
	r.AddConsumerHandler("charge", "orders", e.subscriber(pubsub.SubscriberConfig{MaxDeliveries: 2}), func(msg *message.Message) error {
		switch string(msg.Payload) {
		case "fail":
			return errDeclined
		case "panic once":
			panicked.Do(func() { panic("boom") })
		}
		return nil
	})
	start(t, r)

	ok := newMessage("", "ok")
	e.publish("orders", ok, newMessage("", "fail"), newMessage("", "panic once"), newMessage(ok.UUID, "ok"))
	st := e.settled("orders")
	require.EqualValues(t, 1, st.Dead)

	// Deliveries: ok (1), fail (1, 2), panic once (1 panic, 2), the duplicate of ok (1).
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP relq_handler_messages_total Deliveries of relq messages to a handler, by outcome.
# TYPE relq_handler_messages_total counter
relq_handler_messages_total{handler="charge",outcome="duplicate",topic="orders"} 1
relq_handler_messages_total{handler="charge",outcome="error",topic="orders"} 2
relq_handler_messages_total{handler="charge",outcome="panic",topic="orders"} 1
relq_handler_messages_total{handler="charge",outcome="success",topic="orders"} 2
# HELP relq_handler_attempts Delivery attempt of each relq message a handler received (1 on the first delivery).
# TYPE relq_handler_attempts histogram
relq_handler_attempts_bucket{handler="charge",topic="orders",le="1"} 4
relq_handler_attempts_bucket{handler="charge",topic="orders",le="2"} 6
relq_handler_attempts_bucket{handler="charge",topic="orders",le="3"} 6
relq_handler_attempts_bucket{handler="charge",topic="orders",le="5"} 6
relq_handler_attempts_bucket{handler="charge",topic="orders",le="10"} 6
relq_handler_attempts_bucket{handler="charge",topic="orders",le="20"} 6
relq_handler_attempts_bucket{handler="charge",topic="orders",le="+Inf"} 6
relq_handler_attempts_sum{handler="charge",topic="orders"} 8
relq_handler_attempts_count{handler="charge",topic="orders"} 6
`), "relq_handler_messages_total", "relq_handler_attempts"))

	durations := histogramCounts(t, reg, "relq_handler_duration_seconds")
	require.Equal(t, map[string]uint64{"duplicate": 1, "error": 2, "panic": 1, "success": 2}, durations)
}

// histogramCounts returns the sample count of each outcome of a histogram.
func histogramCounts(t *testing.T, reg *prometheus.Registry, name string) map[string]uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out
}

// Metrics called twice on one registry (two routers of one process) shares the series; a
// clash with another collector of the same name is an error.
func TestMetricsRegistration(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := metrics(t, middleware.MetricsConfig{Registerer: reg})
	b := metrics(t, middleware.MetricsConfig{Registerer: reg})
	ok := func(*message.Message) ([]*message.Message, error) { return nil, nil }
	for _, mw := range []message.HandlerMiddleware{a, b} {
		_, err := mw(ok)(newMessage("", ""))
		require.NoError(t, err)
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP relq_handler_messages_total Deliveries of relq messages to a handler, by outcome.
# TYPE relq_handler_messages_total counter
relq_handler_messages_total{handler="",outcome="success",topic=""} 2
`), "relq_handler_messages_total"))

	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "app", Name: "handler_messages_total", Help: "x"}))
	_, err := middleware.Metrics(middleware.MetricsConfig{Registerer: other, Namespace: "app"})
	require.Error(t, err)
}

// A panic is counted and passed on unchanged; one that Watermill's Recoverer turned into
// an error is counted as a panic too. Messages not from relq have no attempt to observe.
func TestMetricsPanics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	mw := metrics(t, middleware.MetricsConfig{Registerer: reg, Namespace: "app"})
	boom := func(*message.Message) ([]*message.Message, error) { panic("boom") }
	require.PanicsWithValue(t, "boom", func() { _, _ = mw(boom)(newMessage("", "")) })
	_, err := mw(wm.Recoverer(boom))(newMessage("", ""))
	require.Error(t, err)

	require.Equal(t, map[string]uint64{"panic": 2}, histogramCounts(t, reg, "app_handler_duration_seconds"))
	n, err := testutil.GatherAndCount(reg, "app_handler_attempts")
	require.NoError(t, err)
	require.Zero(t, n)
}
