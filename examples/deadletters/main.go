// Command deadletters shows a poison message ending in the dead-letter store of the list
// backend, inspected and requeued once the handler is fixed.
//
// The handler charges orders "<id> <amount>". It cannot parse "$12.50", so that message fails
// on every delivery; after MaxDeliveries (3) it leaves the queue for the group's dead-letter
// store while the other orders go on. The program then lists the dead letters with their
// reason and attempts (Backend.DeadLetters), "deploys a fix" so that the handler accepts a
// dollar sign, requeues them (Backend.RequeueDeadLetters, attempts reset) and the same
// router handles the message.
//
//	REDIS_URL=redis://localhost:6379 go run ./examples/deadletters
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/examples/internal/exampleredis"
	"github.com/relq/relq/pubsub"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, os.Getenv("REDIS_URL")); err != nil {
		log.Fatal(err)
	}
}

const (
	prefix, topic, group = "relq-example-deadletters", "orders", "billing"
	maxDeliveries        = 3
)

func run(ctx context.Context, out io.Writer, redisURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, closeRedis, err := exampleredis.Connect(ctx, redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
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
		// The list backend makes a retry ready when a claim next runs after its backoff, so
		// within Block (500ms by default); the zset backend wakes for it on time.
		NackBackoff: pubsub.ExponentialBackoff(20*time.Millisecond, time.Second),
	}, logger)
	if err != nil {
		return err
	}

	// The handler reports every delivery to run, which prints them in order.
	var fixed atomic.Bool
	events := make(chan string)
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, logger)
	if err != nil {
		return err
	}
	router.AddConsumerHandler("charge", topic, sub, func(msg *message.Message) error {
		id, amount, _ := strings.Cut(string(msg.Payload), " ")
		if fixed.Load() {
			amount = strings.TrimPrefix(amount, "$")
		}
		_, err := strconv.ParseFloat(amount, 64)
		event := fmt.Sprintf("charged %s %s (attempt %d)", id, amount, pubsub.Attempt(msg))
		if err != nil {
			event = fmt.Sprintf("failed  %s %s (attempt %d): %v", id, amount, pubsub.Attempt(msg), err)
		}
		select {
		case events <- event:
		case <-msg.Context().Done():
		}
		return err // an error nacks the message: it is retried after the backoff
	})
	routerErr := make(chan error, 1)
	go func() { routerErr <- router.Run(ctx) }()
	defer func() { _ = router.Close(); <-routerErr }()
	select {
	case <-router.Running(): // the group exists now, so it gets what is published next
	case err := <-routerErr:
		return err
	}

	err = pub.Publish(topic,
		message.NewMessage(watermill.NewUUID(), []byte("order-1 7.00")),
		message.NewMessage(watermill.NewUUID(), []byte("order-2 $12.50")),
		message.NewMessage(watermill.NewUUID(), []byte("order-3 3.10")),
	)
	if err != nil {
		return err
	}
	// Two orders charged, and three failed deliveries of order-2.
	if err := printEvents(ctx, out, events, 2+maxDeliveries); err != nil {
		return err
	}

	// The subscriber sends nacks to Redis in batches, after the handler returns: poll for the
	// dead letter until it is there (or ctx ends).
	var dead []backend.DeadLetter
	for len(dead) == 0 && err == nil {
		time.Sleep(10 * time.Millisecond)
		dead, err = queue.DeadLetters(ctx, &backend.DeadLettersParams{Topic: topic, Group: group})
	}
	if err != nil {
		return fmt.Errorf("waiting for the dead letter: %w", err)
	}
	fmt.Fprintf(out, "dead letters of %s/%s: %d\n", topic, group, len(dead))
	for _, d := range dead {
		fmt.Fprintf(out, "  %q: %d attempts, reason %q\n", d.Envelope.Payload, d.Attempts, d.Reason)
	}

	fixed.Store(true)
	n, err := queue.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: group, All: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "fixed the handler and requeued %d dead letter(s)\n", n)
	return printEvents(ctx, out, events, 1)
}

// printEvents prints the next n events of the handler.
func printEvents(ctx context.Context, out io.Writer, events <-chan string, n int) error {
	for range n {
		select {
		case e := <-events:
			fmt.Fprintln(out, e)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the handler: %w", ctx.Err())
		}
	}
	return nil
}
