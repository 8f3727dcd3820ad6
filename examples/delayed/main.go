// Command delayed schedules jobs on the zset backend and runs them with a Watermill router.
//
// Five jobs are published in one batch, each with a delay (pubsub.SetDelay) and one with a
// priority (pubsub.SetPriority). The handler receives them in due order, not publish order,
// and of the jobs that are due, the higher priority first (two are due together here). It
// prints how late each job fired, in coarse buckets: the zset backend wakes an idle consumer at
// the due time instead of polling, so jobs fire within milliseconds of being due.
//
//	REDIS_URL=redis://localhost:6379 go run ./examples/delayed
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/relq/relq/adapters/zset"
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

func run(ctx context.Context, out io.Writer, redisURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, closeRedis, err := exampleredis.Connect(ctx, redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	const prefix, topic = "relq-example-delayed", "jobs"
	if err := exampleredis.DeletePrefix(ctx, client, prefix); err != nil { // a clean slate
		return err
	}

	backend, err := zset.New(client, zset.Options{Prefix: prefix})
	if err != nil {
		return err
	}
	defer backend.Close() // its blocking claims' connections, once the subscribers closed
	logger := watermill.NewSlogLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	pub, err := pubsub.NewPublisher(backend, pubsub.PublisherConfig{}, logger)
	if err != nil {
		return err
	}
	defer pub.Close()
	sub, err := pubsub.NewSubscriber(backend, pubsub.SubscriberConfig{Group: "workers"}, logger)
	if err != nil {
		return err
	}

	// The handler compares the clock with the due time the publisher put in the metadata,
	// and reports to run, which prints.
	fired := make(chan string)
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, logger)
	if err != nil {
		return err
	}
	router.AddConsumerHandler("run-jobs", topic, sub, func(msg *message.Message) error {
		due, err := time.Parse(time.RFC3339Nano, msg.Metadata.Get("due"))
		if err != nil {
			return err
		}
		select {
		case fired <- fmt.Sprintf("fired %-13s %s", msg.Payload, lateness(time.Since(due))):
			return nil
		case <-msg.Context().Done():
			return msg.Context().Err()
		}
	})
	routerErr := make(chan error, 1)
	go func() { routerErr <- router.Run(ctx) }()
	defer func() { _ = router.Close(); <-routerErr }()
	select {
	case <-router.Running(): // subscribed: the group "workers" gets what is published next
	case err := <-routerErr:
		return err
	}

	jobs := []struct {
		name     string
		delay    time.Duration
		priority int
	}{
		{"send-reminder", 300 * time.Millisecond, 0},
		{"charge-card", 100 * time.Millisecond, 0},
		{"email-receipt", 200 * time.Millisecond, 0},
		{"notify-admin", 200 * time.Millisecond, 10},
		{"warm-cache", 0, 0},
	}
	now := time.Now()
	var msgs []*message.Message
	for _, j := range jobs {
		msg := message.NewMessage(watermill.NewUUID(), []byte(j.name))
		msg.Metadata.Set("due", now.Add(j.delay).Format(time.RFC3339Nano))
		pubsub.SetDelay(msg, j.delay)
		pubsub.SetPriority(msg, j.priority)
		msgs = append(msgs, msg)
		fmt.Fprintf(out, "scheduled %-13s in %3dms, priority %d\n", j.name, j.delay.Milliseconds(), j.priority)
	}
	if err := pub.Publish(topic, msgs...); err != nil { // one batch, one due-time origin
		return err
	}

	for range jobs {
		select {
		case line := <-fired:
			fmt.Fprintln(out, line)
		case <-ctx.Done():
			return fmt.Errorf("waiting for jobs: %w", ctx.Err())
		}
	}
	return nil
}

// lateness describes how late a job fired in coarse buckets, so the output is stable.
func lateness(late time.Duration) string {
	switch {
	case late < 50*time.Millisecond:
		return "on time (<50ms late)"
	case late < 250*time.Millisecond:
		return "a little late (50-250ms)"
	}
	return "late (>=250ms)"
}
