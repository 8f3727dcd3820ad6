// Command fanout delivers every message of one topic to two consumer groups on the streams
// backend, each group consumed by its own handler in one Watermill router.
//
// A group receives every message published after it exists; the consumers inside one group
// share its messages. Here "billing" and "shipping" subscribe to "orders", five orders are
// published once, and each group's handler gets all five. Each group prints what it got,
// sorted, since the two groups run concurrently.
//
//	REDIS_URL=redis://localhost:6379 go run ./examples/fanout
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/relq/relq/adapters/streams"
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

// received is one message as a group's handler saw it.
type received struct {
	group, order string
}

func run(ctx context.Context, out io.Writer, redisURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, closeRedis, err := exampleredis.Connect(ctx, redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	const prefix, topic = "relq-example-fanout", "orders"
	if err := exampleredis.DeletePrefix(ctx, client, prefix); err != nil {
		return err
	}

	backend, err := streams.New(client, streams.Options{Prefix: prefix})
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

	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, logger)
	if err != nil {
		return err
	}
	got := make(chan received)
	groups := []string{"billing", "shipping"}
	for _, group := range groups {
		// One Subscriber per group: the group is part of its config.
		sub, err := pubsub.NewSubscriber(backend, pubsub.SubscriberConfig{Group: group}, logger)
		if err != nil {
			return err
		}
		router.AddConsumerHandler(group, topic, sub, func(msg *message.Message) error {
			select {
			case got <- received{group, string(msg.Payload)}:
				return nil
			case <-msg.Context().Done():
				return msg.Context().Err()
			}
		})
	}
	routerErr := make(chan error, 1)
	go func() { routerErr <- router.Run(ctx) }()
	defer func() { _ = router.Close(); <-routerErr }()
	select {
	case <-router.Running(): // both groups exist now, so both get what is published next
	case err := <-routerErr:
		return err
	}

	var orders []*message.Message
	for i := 1; i <= 5; i++ {
		orders = append(orders, message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "order-%d", i)))
	}
	if err := pub.Publish(topic, orders...); err != nil {
		return err
	}
	fmt.Fprintf(out, "published %d orders to %q\n", len(orders), topic)

	// Delivery is at least once, so count distinct orders per group.
	seen := map[string]map[string]bool{}
	for _, g := range groups {
		seen[g] = map[string]bool{}
	}
	for remaining := len(groups) * len(orders); remaining > 0; {
		select {
		case r := <-got:
			if !seen[r.group][r.order] {
				seen[r.group][r.order] = true
				remaining--
			}
		case <-ctx.Done():
			return fmt.Errorf("waiting for deliveries: %w", ctx.Err())
		}
	}
	for _, g := range groups {
		list := slices.Sorted(maps.Keys(seen[g]))
		fmt.Fprintf(out, "%-8s got %d of %d: %s\n", g, len(list), len(orders), strings.Join(list, " "))
	}
	return nil
}
