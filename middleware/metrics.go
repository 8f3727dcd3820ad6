package middleware

import (
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmiddleware "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relq/relq/pubsub"
)

// MetricsNamespaceDefault is the default MetricsConfig.Namespace.
const MetricsNamespaceDefault = "relq"

// Outcomes, the values of the "outcome" label.
const (
	OutcomeSuccess   = "success"   // the handler returned no error: the message is acked
	OutcomeError     = "error"     // the handler returned an error: the message is nacked
	OutcomePanic     = "panic"     // the handler panicked (or Watermill's Recoverer caught a panic)
	OutcomeDuplicate = "duplicate" // Idempotent acked an already handled message without running the handler
)

// Defaults of the bucket fields of MetricsConfig.
var (
	// DurationBucketsDefault are Prometheus's default buckets, 5ms to 10s.
	DurationBucketsDefault = prometheus.DefBuckets
	// AttemptBucketsDefault cover the first delivery, early retries and the default
	// MaxDeliveries (10) of the subscriber.
	AttemptBucketsDefault = []float64{1, 2, 3, 5, 10, 20}
)

// MetricsConfig configures Metrics.
type MetricsConfig struct {
	// Registerer receives the collectors. Defaults to prometheus.DefaultRegisterer.
	Registerer prometheus.Registerer
	// Namespace starts every metric name. Defaults to MetricsNamespaceDefault ("relq").
	Namespace string
	// DurationBuckets are the buckets of the duration histogram, in seconds.
	// Defaults to DurationBucketsDefault.
	DurationBuckets []float64
	// AttemptBuckets are the buckets of the attempts histogram. Defaults to
	// AttemptBucketsDefault.
	AttemptBuckets []float64
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c MetricsConfig) WithDefaults() MetricsConfig {
	if c.Registerer == nil {
		c.Registerer = prometheus.DefaultRegisterer
	}
	if c.Namespace == "" {
		c.Namespace = MetricsNamespaceDefault
	}
	if len(c.DurationBuckets) == 0 {
		c.DurationBuckets = DurationBucketsDefault
	}
	if len(c.AttemptBuckets) == 0 {
		c.AttemptBuckets = AttemptBucketsDefault
	}
	return c
}

// Metrics returns middleware that measures each delivery a handler gets, labelled by
// handler name and subscribed topic (from the router's message context):
//
//   - <ns>_handler_duration_seconds, histogram {handler, topic, outcome}: time in the
//     handler and the middleware inside Metrics;
//   - <ns>_handler_messages_total, counter {handler, topic, outcome}: deliveries by outcome
//     (OutcomeSuccess, OutcomeError, OutcomePanic, OutcomeDuplicate);
//   - <ns>_handler_attempts, histogram {handler, topic}: the delivery attempt of each
//     message (pubsub.Attempt; 1 on the first delivery), so retries show without reading
//     Redis. Messages that did not come from a relq Subscriber are not observed.
//
// Put it outermost, so that it sees the outcome of the whole chain. A panic is counted and
// passed on (the router recovers it and nacks the message). Calling Metrics again with the
// same Registerer reuses the collectors registered first (prometheus.AlreadyRegisteredError),
// so two routers of one process share the series; the first call's buckets win. A name that
// Prometheus rejects, or a clash with another kind of collector of the same name, is
// returned as an error.
//
// The queue side (ready, pending, dead letters) is read from Redis by the metrics package.
func Metrics(cfg MetricsConfig) (message.HandlerMiddleware, error) {
	cfg = cfg.WithDefaults()
	labels := []string{"handler", "topic", "outcome"}
	duration, err := register(cfg.Registerer, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: cfg.Namespace,
		Name:      "handler_duration_seconds",
		Help:      "Time a relq message spent in its handler, by outcome.",
		Buckets:   cfg.DurationBuckets,
	}, labels))
	if err != nil {
		return nil, err
	}
	outcomes, err := register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: cfg.Namespace,
		Name:      "handler_messages_total",
		Help:      "Deliveries of relq messages to a handler, by outcome.",
	}, labels))
	if err != nil {
		return nil, err
	}
	attempts, err := register(cfg.Registerer, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: cfg.Namespace,
		Name:      "handler_attempts",
		Help:      "Delivery attempt of each relq message a handler received (1 on the first delivery).",
		Buckets:   cfg.AttemptBuckets,
	}, labels[:2]))
	if err != nil {
		return nil, err
	}

	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) (produced []*message.Message, err error) {
			handler := message.HandlerNameFromCtx(msg.Context())
			topic := message.SubscribeTopicFromCtx(msg.Context())
			if n := pubsub.Attempt(msg); n > 0 {
				attempts.WithLabelValues(handler, topic).Observe(float64(n))
			}
			start := time.Now()
			outcome := OutcomePanic // until the handler returns
			defer func() {
				duration.WithLabelValues(handler, topic, outcome).Observe(time.Since(start).Seconds())
				outcomes.WithLabelValues(handler, topic, outcome).Inc()
			}()
			produced, err = h(msg)
			var recovered wmmiddleware.RecoveredPanicError
			switch {
			case errors.As(err, &recovered):
				outcome = OutcomePanic
			case err != nil:
				outcome = OutcomeError
			case Skipped(msg):
				outcome = OutcomeDuplicate
			default:
				outcome = OutcomeSuccess
			}
			return produced, err
		}
	}, nil
}

// register registers c, or returns the collector already registered under its name.
func register[C prometheus.Collector](r prometheus.Registerer, c C) (C, error) {
	err := r.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
		return c, fmt.Errorf("relq: metrics: a collector of another type is registered under the same name: %w", err)
	}
	return c, fmt.Errorf("relq: metrics: %w", err)
}
