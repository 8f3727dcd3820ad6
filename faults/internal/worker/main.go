// Command worker is the consumer process of the faults package's kill test: it subscribes to
// one topic with one backend and handles messages with a little random work, writing a line
// to an append-only log before and after each one, so that the test can tell, after killing
// it with SIGKILL, what it had in flight and what it had finished.
//
// Log lines, one write(2) each (a SIGKILL loses nothing already written; no fsync, since the
// machine does not crash, only the process):
//
//	start <unix-nanos> <delivery-id> <attempt> <uuid>   before the handler's work
//	done  <unix-nanos> <delivery-id> <attempt> <uuid>   after the work, before the ack
//
// SIGTERM closes the subscriber gracefully (in-flight handlers finish, acks are flushed,
// prefetched messages are released). The worker exits by itself when its stdin reaches EOF,
// that is when the test process that started it is gone, so a crashed test leaves no worker
// behind.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func main() {
	var (
		url         = flag.String("redis", "", "Redis URL")
		backendName = flag.String("backend", "", "list, zset or streams")
		prefix      = flag.String("prefix", "", "key prefix")
		topic       = flag.String("topic", "", "topic to consume")
		group       = flag.String("group", backend.DefaultGroup, "consumer group")
		lease       = flag.Duration("lease", 2*time.Second, "lease of a claimed message")
		concurrency = flag.Int("concurrency", 4, "messages in flight")
		workMax     = flag.Duration("work", 5*time.Millisecond, "handler work is random in [0, work)")
		logPath     = flag.String("log", "", "append-only log of handled deliveries")
		ordered     = flag.Bool("ordered", false, "ordered subscription (SubscriberConfig.Ordered)")
		verbose     = flag.Bool("v", false, "log relq's info messages to stderr")
	)
	flag.Parse()
	if err := run(*url, *backendName, *prefix, *topic, *group, *lease, *concurrency, *workMax, *logPath, *verbose, *ordered); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(url, backendName, prefix, topic, group string, lease time.Duration, concurrency int,
	workMax time.Duration, logPath string, verbose, ordered bool) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	client := redis.NewClient(opt)
	defer client.Close()
	b, err := newBackend(backendName, client, prefix)
	if err != nil {
		return err
	}
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()

	var logger watermill.LoggerAdapter = watermill.NopLogger{}
	if verbose {
		logger = watermill.NewStdLogger(false, false)
	}
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{
		Group: group, Concurrency: concurrency, Lease: lease, Ordered: ordered,
		RetryMin: 20 * time.Millisecond, RetryMax: 500 * time.Millisecond,
	}, logger)
	if err != nil {
		return err
	}
	defer sub.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3) // the test process is gone
	}()

	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for msg := range msgs {
				id, attempt := pubsub.DeliveryID(msg), pubsub.Attempt(msg)
				if err := writeLine(out, "start", id, attempt, msg.UUID); err != nil {
					fmt.Fprintln(os.Stderr, "worker:", err)
					os.Exit(1)
				}
				if workMax > 0 {
					time.Sleep(rand.N(workMax))
				}
				// Written before the ack: a message acked is always in the log, so a message
				// missing from every log was never acked.
				if err := writeLine(out, "done", id, attempt, msg.UUID); err != nil {
					fmt.Fprintln(os.Stderr, "worker:", err)
					os.Exit(1)
				}
				msg.Ack()
			}
		})
	}
	wg.Wait()
	return sub.Close()
}

func writeLine(w io.Writer, event, id string, attempt int, uuid string) error {
	line := make([]byte, 0, 96)
	line = append(line, event...)
	line = append(line, ' ')
	line = strconv.AppendInt(line, time.Now().UnixNano(), 10)
	line = append(line, ' ')
	line = append(line, id...)
	line = append(line, ' ')
	line = strconv.AppendInt(line, int64(attempt), 10)
	line = append(line, ' ')
	line = append(line, uuid...)
	line = append(line, '\n')
	_, err := w.Write(line)
	return err
}

func newBackend(name string, c redis.UniversalClient, prefix string) (backend.Backend, error) {
	switch name {
	case "list":
		return list.New(c, list.Options{Prefix: prefix})
	case "zset":
		return zset.New(c, zset.Options{Prefix: prefix})
	case "streams":
		return streams.New(c, streams.Options{Prefix: prefix})
	}
	return nil, fmt.Errorf("unknown backend %q", name)
}
