// Command partitioned keeps account balances from a topic of 4 partitions, consumed by two
// ordered subscriptions of one group in a Watermill router. Every event carries its account
// as its partition key (pubsub.PublisherConfig.Key), so the events of one account go to one
// partition, in publish order, and with SubscriberConfig.Ordered they are handled one at a
// time in that order: the ledger can apply a withdrawal only after the deposit before it, and
// it never sees one out of turn.
//
// It creates the topic with partition.Create (as `relq topic create accounts --partitions 4`
// would), waits until both subscriptions have their share of the partitions, publishes a
// deposit and a withdrawal for each of 8 accounts, 5 times over, and prints which partition
// each account lives on, how the partitions are shared, and the balances.
//
//	REDIS_URL=redis://localhost:6379 go run ./examples/partitioned
//
// Without REDIS_URL it starts a private redis-server from PATH for the run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/examples/internal/exampleredis"
	"github.com/relq/relq/partition"
	"github.com/relq/relq/pubsub"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, os.Getenv("REDIS_URL"))
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "partitioned:", err)
		os.Exit(1)
	}
}

const (
	prefix, topic, group = "relq-example-partitioned", "accounts", "ledger"
	partitions           = 4
	accounts, rounds     = 8, 5
)

// ledger is the handlers' state: it relies on each account's events arriving in order.
type ledger struct {
	mu        sync.Mutex
	balance   map[string]int
	next      map[string]int            // the sequence number each account expects next
	partition map[string]string         // account -> the partition its events came from
	workers   map[string]map[string]int // worker -> partition -> events handled
	outOfTurn int
}

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
	defer queue.Close()
	// Before anything publishes or subscribes: the count is fixed from here on.
	if err := partition.Create(ctx, queue, topic, partitions); err != nil {
		return err
	}
	fmt.Fprintf(out, "topic %q has %d partitions\n", topic, partitions)

	logger := watermill.NewSlogLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	pub, err := pubsub.NewPublisher(queue, pubsub.PublisherConfig{
		Key: func(_ string, msg *message.Message) string { return msg.Metadata.Get("account") },
	}, logger)
	if err != nil {
		return err
	}
	defer pub.Close()

	l := &ledger{balance: map[string]int{}, next: map[string]int{}, partition: map[string]string{}, workers: map[string]map[string]int{}}
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, logger)
	if err != nil {
		return err
	}
	for _, worker := range []string{"worker-a", "worker-b"} {
		// Ordered: each partition one message at a time, each once the one before it is
		// settled, so an account's events keep their order across retries, crashes and the
		// shares moving; Concurrency 2: two partitions side by side.
		sub, err := pubsub.NewSubscriber(queue, pubsub.SubscriberConfig{Group: group, Consumer: worker, Ordered: true, Concurrency: 2}, logger)
		if err != nil {
			return err
		}
		router.AddConsumerHandler(worker, topic, sub, func(msg *message.Message) error { return l.handle(worker, msg) })
	}
	routerErr := make(chan error, 1)
	go func() { routerErr <- router.Run(ctx) }()
	defer func() { _ = router.Close(); <-routerErr }()
	select {
	case <-router.Running():
	case err := <-routerErr:
		return err
	}
	if err := l.waitForShares(ctx, pub); err != nil {
		return err
	}

	for round := range rounds {
		var batch []*message.Message
		for a := 1; a <= accounts; a++ {
			for i, op := range []string{"deposit 10", "withdraw 10"} {
				m := message.NewMessage(watermill.NewUUID(), []byte(op))
				m.Metadata.Set("account", "acct-"+strconv.Itoa(a))
				m.Metadata.Set("seq", strconv.Itoa(2*round+i))
				batch = append(batch, m)
			}
		}
		if err := pub.Publish(topic, batch...); err != nil {
			return err
		}
	}
	if err := l.waitFor(ctx, accounts*rounds*2); err != nil {
		return err
	}
	l.print(out)
	return nil
}

// handle applies one event. An event of an account that is not the one it expects next is
// counted as out of turn (and acked: a repeat of one already applied, as at-least-once
// delivery may bring, is skipped by its sequence number).
func (l *ledger) handle(worker string, msg *message.Message) error {
	id := msg.Metadata.Get(pubsub.MetadataDeliveryID)
	part, _, _ := strings.Cut(id, ":")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.workers[worker] == nil {
		l.workers[worker] = map[string]int{}
	}
	account := msg.Metadata.Get("account")
	if account == "" {
		l.workers[worker]["probe"]++
		return nil // one of waitForShares' probes
	}
	l.workers[worker][part]++
	seq, err := strconv.Atoi(msg.Metadata.Get("seq"))
	if err != nil {
		return fmt.Errorf("event without a sequence number: %w", err)
	}
	switch {
	case seq < l.next[account]:
		return nil // delivered again: applied already
	case seq > l.next[account]:
		l.outOfTurn++
	}
	l.next[account] = seq + 1
	l.partition[account] = part
	op, amount, _ := strings.Cut(string(msg.Payload), " ")
	n, _ := strconv.Atoi(amount)
	if op == "withdraw" {
		if l.balance[account] < n {
			return errors.New("withdrawal before its deposit")
		}
		n = -n
	}
	l.balance[account] += n
	return nil
}

// waitForShares publishes unkeyed probes until both workers handled one: by then the second
// has its share, which the first gave up, so the partitions stay where they are while the
// accounts' events flow.
func (l *ledger) waitForShares(ctx context.Context, pub *pubsub.Publisher) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		l.mu.Lock()
		both := len(l.workers) == 2
		l.mu.Unlock()
		if both {
			return nil
		}
		if err := pub.Publish(topic, message.NewMessage(watermill.NewUUID(), []byte("probe"))); err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("waiting for both workers' shares: %w", ctx.Err())
		}
	}
}

// waitFor waits until n account events were applied.
func (l *ledger) waitFor(ctx context.Context, n int) error {
	for {
		l.mu.Lock()
		applied := 0
		for _, next := range l.next {
			applied += next
		}
		l.mu.Unlock()
		if applied >= n {
			return nil
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("waiting for the events: %d of %d applied: %w", applied, n, ctx.Err())
		}
	}
}

func (l *ledger) print(out io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for a := 1; a <= accounts; a++ {
		account := "acct-" + strconv.Itoa(a)
		fmt.Fprintf(out, "%s: partition %s, %d events, balance %d\n", account, l.partition[account], l.next[account], l.balance[account])
	}
	for _, w := range []string{"worker-a", "worker-b"} {
		served := len(l.workers[w])
		if l.workers[w]["probe"] > 0 {
			served--
		}
		fmt.Fprintf(out, "%s handled the accounts of %d of the %d partitions\n", w, served, partitions)
	}
	fmt.Fprintf(out, "events out of turn: %d\n", l.outOfTurn)
}
