// Command worker is a Watermill router that charges payments from a relq topic with the
// three middleware of github.com/relq/relq/middleware, in the recommended order:
//
//	Metrics     outermost: counts and times each delivery by outcome
//	Backoff     a failed delivery is nacked with an exponential delay: retries wait in Redis
//	Idempotent  an order already charged is not charged again
//	Retry       Watermill's in-process retry, for blips (one quick retry here)
//	Recoverer   a panic becomes an error, so it is retried like one
//
// It publishes three orders: order-1 is charged at once; order-2 meets a gateway timeout
// that outlasts the in-process retry, so Backoff sends it back through Redis and its second
// delivery is charged; order-3's card is declined on every delivery, so after MaxDeliveries
// (3) it lands in the dead-letter store, with the handler's error as its reason. Then
// order-1 is published again with the same UUID, as a producer retrying a publish would:
// Idempotent acks it without charging it twice. The program prints what the handler saw
// and the metrics.
//
//	REDIS_URL=redis://localhost:6379 go run ./examples/worker
//
// Without REDIS_URL it starts a private redis-server from PATH for the run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	wm "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/examples/internal/exampleredis"
	"github.com/relq/relq/middleware"
	"github.com/relq/relq/pubsub"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, os.Getenv("REDIS_URL"))
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

const (
	prefix, topic, group = "relq-example-worker", "payments", "billing"
	maxDeliveries        = 3
)

var (
	errTimeout  = errors.New("gateway timeout")
	errDeclined = errors.New("card declined")
)

func run(ctx context.Context, out io.Writer, redisURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, closeRedis, err := exampleredis.Connect(ctx, redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	// Removes the queue and the idempotency markers of an earlier run: both live under
	// "{relq-example-worker:".
	if err := exampleredis.DeletePrefix(ctx, client, prefix); err != nil {
		return err
	}

	queue, err := list.New(client, list.Options{Prefix: prefix})
	if err != nil {
		return err
	}
	defer queue.Close() // its blocking claims' connections, once the subscribers closed
	// The router logs each failed delivery at error level, on stderr.
	logger := watermill.NewSlogLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	pub, err := pubsub.NewPublisher(queue, pubsub.PublisherConfig{}, logger)
	if err != nil {
		return err
	}
	defer pub.Close()
	sub, err := pubsub.NewSubscriber(queue, pubsub.SubscriberConfig{
		Group:         group,
		MaxDeliveries: maxDeliveries,
		Block:         100 * time.Millisecond, // how late a retry may be on the list backend
	}, logger)
	if err != nil {
		return err
	}

	registry := prometheus.NewRegistry()
	metrics, err := middleware.Metrics(middleware.MetricsConfig{Registerer: registry})
	if err != nil {
		return err
	}
	backoff, err := middleware.Backoff(middleware.BackoffConfig{
		Initial: 100 * time.Millisecond,
		Max:     time.Second,
	})
	if err != nil {
		return err
	}
	idempotent, err := middleware.Idempotent(middleware.IdempotentConfig{
		Client:        client,
		Prefix:        prefix,
		InProgressTTL: 10 * time.Second, // longer than any charge, with its in-process retry
		Logger:        logger,
	})
	if err != nil {
		return err
	}
	retry := wm.Retry{MaxRetries: 1, InitialInterval: 10 * time.Millisecond}

	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, logger)
	if err != nil {
		return err
	}
	router.AddMiddleware(metrics, backoff, idempotent, retry.Middleware, wm.Recoverer)
	gw := &gateway{calls: map[string]int{}}
	book := &ledger{tries: map[string]map[int][]string{}}
	router.AddConsumerHandler("charge", topic, sub, func(msg *message.Message) error {
		order := string(msg.Payload)
		err := gw.charge(order)
		book.record(order, pubsub.Attempt(msg), err)
		return err
	})
	routerErr := make(chan error, 1)
	go func() { routerErr <- router.Run(ctx) }()
	defer func() { _ = router.Close(); <-routerErr }()
	select {
	case <-router.Running(): // the group exists now, so it gets what is published next
	case err := <-routerErr:
		return err
	}

	orders := []*message.Message{
		message.NewMessage(watermill.NewUUID(), []byte("order-1")),
		message.NewMessage(watermill.NewUUID(), []byte("order-2")),
		message.NewMessage(watermill.NewUUID(), []byte("order-3")),
	}
	if err := pub.Publish(topic, orders...); err != nil {
		return err
	}
	fmt.Fprintln(out, "published order-1, order-2, order-3")
	// Two charged, one dead: the retries are over.
	if err := waitFor(ctx, queue, func(st backend.Stats) bool { return st.Counters.Acked == 2 && st.Dead == 1 }); err != nil {
		return err
	}
	dead, err := queue.DeadLetters(ctx, &backend.DeadLettersParams{Topic: topic, Group: group})
	if err != nil {
		return err
	}
	for _, order := range []string{"order-1", "order-2", "order-3"} {
		fmt.Fprintf(out, "%s: %s\n", order, book.describe(order))
	}
	for _, d := range dead {
		fmt.Fprintf(out, "dead letter: %s after %d deliveries, reason %q\n", d.Envelope.Payload, d.Attempts, d.Reason)
	}

	dup := message.NewMessage(orders[0].UUID, orders[0].Payload)
	if err := pub.Publish(topic, dup); err != nil {
		return err
	}
	fmt.Fprintln(out, "published order-1 again, with the same UUID")
	if err := waitFor(ctx, queue, func(st backend.Stats) bool { return st.Counters.Acked == 3 }); err != nil {
		return err
	}
	fmt.Fprintf(out, "order-1 after the duplicate: %s\n", book.describe("order-1"))

	fmt.Fprintln(out, "metrics:")
	return printMetrics(out, registry)
}

// gateway is a payment gateway: order-2 times out twice, order-3's card is declined.
type gateway struct {
	mu    sync.Mutex
	calls map[string]int
}

func (g *gateway) charge(order string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls[order]++
	switch {
	case order == "order-2" && g.calls[order] <= 2:
		return errTimeout
	case order == "order-3":
		return errDeclined
	}
	return nil
}

// ledger records what each handler call of each delivery of an order returned.
type ledger struct {
	mu    sync.Mutex
	tries map[string]map[int][]string // order -> delivery attempt -> results
}

func (l *ledger) record(order string, attempt int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tries[order] == nil {
		l.tries[order] = map[int][]string{}
	}
	result := "charged"
	if err != nil {
		result = err.Error()
	}
	l.tries[order][attempt] = append(l.tries[order][attempt], result)
}

// describe says what the handler saw of order: "delivery 1: gateway timeout, gateway
// timeout; delivery 2: charged".
func (l *ledger) describe(order string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, attempt := range slices.Sorted(maps.Keys(l.tries[order])) {
		parts = append(parts, fmt.Sprintf("delivery %d: %s", attempt, strings.Join(l.tries[order][attempt], ", ")))
	}
	return strings.Join(parts, "; ")
}

// waitFor polls the group's stats until cond holds and nothing is in flight or waiting.
func waitFor(ctx context.Context, queue backend.Backend, cond func(backend.Stats) bool) error {
	for {
		st, err := queue.Stats(ctx, &backend.StatsParams{Topic: topic, Group: group})
		if err != nil {
			return err
		}
		if cond(st) && st.Ready == 0 && st.Delayed == 0 && st.Pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the handler: %w (stats %+v)", ctx.Err(), st)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// printMetrics prints the outcome counters and the attempts histogram of the handler.
func printMetrics(out io.Writer, registry *prometheus.Registry) error {
	families, err := registry.Gather()
	if err != nil {
		return err
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			series := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch f.GetName() {
			case "relq_handler_messages_total":
				fmt.Fprintf(out, "  %s %g\n", series, m.GetCounter().GetValue())
			case "relq_handler_attempts":
				h := m.GetHistogram()
				fmt.Fprintf(out, "  %s count %d, sum %g\n", series, h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
	return nil
}
