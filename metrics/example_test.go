package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/metrics"
	"github.com/relq/relq/pubsub"
)

// Register a collector for the "orders" topic and serve it on /metrics. The example scrapes
// the handler once, as Prometheus would, and prints a few of the series.
func ExampleNewCollector() {
	// In an application: redis.NewClient(&redis.Options{Addr: "localhost:6379"}).
	opt, err := redis.ParseURL(redistest.SharedURL())
	if err != nil {
		panic(err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	be, err := list.New(client, list.Options{Prefix: "example-" + time.Now().Format("150405.000000")})
	if err != nil {
		panic(err)
	}
	// The group a subscriber of "orders" registers: without one, messages wait in the topic's
	// backlog, which has no group series.
	_ = be.EnsureGroup(context.Background(), &backend.EnsureGroupParams{Topic: "orders", Group: backend.DefaultGroup})
	pub, _ := pubsub.NewPublisher(be, pubsub.PublisherConfig{}, nil)
	_ = pub.Publish("orders", message.NewMessage("1", []byte("a")), message.NewMessage("2", []byte("b")))

	collector, err := metrics.NewCollector(metrics.CollectorConfig{
		Backends: []backend.Backend{be},
		Topics:   []string{"orders"},
	})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// In an application: go http.ListenAndServe(":9100", mux)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "relq_ready{") || strings.HasPrefix(line, "relq_published_total{") ||
			strings.HasPrefix(line, "relq_stats_up{") {
			fmt.Print(line)
		}
	}
	// Output:
	// relq_published_total{backend="list",group="default",topic="orders"} 2
	// relq_ready{backend="list",group="default",topic="orders"} 2
	// relq_stats_up{backend="list"} 1
}
