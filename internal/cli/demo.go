package cli

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/spf13/cobra"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// Demo defaults. The prefix is fixed so that a user can find (and a re-run can clean) what
// the demo left in a Redis of their own.
const (
	DemoPrefixDefault = "relq-demo"
	demoTopic         = "orders"
	demoGroup         = "billing"
)

// Timings of the demo, short so that it finishes in a few seconds.
const (
	demoMaxDeliveries = 3
	demoNackMin       = 200 * time.Millisecond
	demoNackMax       = time.Second
	demoSubLease      = 2 * time.Second
	demoCrashLease    = time.Second
	demoReclaimEvery  = 200 * time.Millisecond
	demoPhaseTimeout  = 20 * time.Second
)

type demoOptions struct {
	redisURL string
	// urlFrom names where redisURL came from, for the output.
	urlFrom string
	prefix  string
}

func newDemoCommand(env Env) *cobra.Command {
	var opts demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Publish and consume through the list backend: a nack, a crash and a dead letter",
		Long: `demo runs a short scenario through the list backend and prints what happened:
a batch publish, a nack and its redelivery, a consumer that crashes holding a message
which another subscriber gets after the lease expires, and a poison message that ends
in the dead-letter store after ` + fmt.Sprint(demoMaxDeliveries) + ` deliveries; then the group's stats.

Redis: $REDIS_URL if set; else a private redis-server found on PATH (temporary, stopped
at exit); else an embedded in-process Redis (miniredis).

The demo works under the key prefix "` + DemoPrefixDefault + `" and deletes the keys of that prefix
(and only those) when it starts. It leaves its dead letter in place, so with REDIS_URL
you can inspect it after the run.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.urlFrom = "--redis-url"
			if opts.redisURL == "" {
				opts.redisURL, opts.urlFrom = env.Getenv("REDIS_URL"), "REDIS_URL"
			}
			lookPath := env.LookPath
			if lookPath == nil {
				lookPath = exec.LookPath
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), env.Err, lookPath, opts)
		},
	}
	cmd.Flags().StringVar(&opts.redisURL, "redis-url", "", "Redis URL (default $REDIS_URL)")
	cmd.Flags().StringVar(&opts.prefix, "prefix", DemoPrefixDefault, "key prefix; its keys are deleted first")
	return cmd
}

// validate rejects a prefix that could not be a key prefix, and so also one that would make
// the cleaning SCAN patterns match other prefixes' keys.
func (o *demoOptions) validate() error {
	return backend.ValidateName("prefix", o.prefix)
}

// demo is one run of the scenario. Handlers run on subscriber goroutines, so output and
// observations go through mu.
type demo struct {
	out   io.Writer
	start time.Time
	opts  demoOptions
	pub   *pubsub.Publisher
	be    *list.Backend
	trips roundTrips

	mu     sync.Mutex
	events []event
}

// event is one delivery seen by a handler (or by the crashing worker).
type event struct {
	order      string
	deliveryID string
	attempt    int
	acked      bool
}

func runDemo(ctx context.Context, out, errOut io.Writer, lookPath func(string) (string, error), opts demoOptions) error {
	if opts.prefix == "" {
		opts.prefix = DemoPrefixDefault
	}
	if err := opts.validate(); err != nil {
		return err
	}
	d := &demo{out: out, start: time.Now(), opts: opts}

	conn, err := connectRedis(ctx, opts.redisURL, opts.urlFrom, lookPath)
	if err != nil {
		return err
	}
	defer conn.Close()
	d.printf("relq demo: list backend, key prefix %q, topic %q, group %q\n", opts.prefix, demoTopic, demoGroup)
	d.printf("Redis: %s\n", conn.describe)

	n, err := cleanPrefix(ctx, conn.client, opts.prefix)
	if err != nil {
		return fmt.Errorf("clean prefix %q: %w", opts.prefix, err)
	}
	d.printf("Deleted %d keys left under prefix %q by an earlier run.\n", n, opts.prefix)

	conn.client.AddHook(&d.trips)
	d.be, err = list.New(conn.client, list.Options{Prefix: opts.prefix})
	if err != nil {
		return err
	}
	defer d.be.Close()
	logger := errorLogger{watermill.NewStdLoggerWithOut(errOut, false, false)}
	d.pub, err = pubsub.NewPublisher(d.be, pubsub.PublisherConfig{}, logger)
	if err != nil {
		return err
	}
	defer d.pub.Close()
	if err := d.be.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: demoTopic, Group: demoGroup}); err != nil {
		return err
	}

	if err := d.batchPhase(ctx, logger); err != nil {
		return err
	}
	if err := d.crashPhase(ctx, conn, logger); err != nil {
		return err
	}
	if err := d.deadLetterPhase(ctx); err != nil {
		return err
	}
	if err := d.statsPhase(ctx); err != nil {
		return err
	}
	if conn.kind == "url" {
		flags := "--prefix " + opts.prefix
		if opts.urlFrom != "REDIS_URL" {
			flags = "--redis-url " + redactURL(opts.redisURL) + " " + flags
		}
		group := fmt.Sprintf("%s --topic %s --group %s", flags, demoTopic, demoGroup)
		d.printf("\nThe dead letter stays in Redis under prefix %q for you to inspect. Try next:\n"+
			"  relq topics %s\n"+
			"  relq stats %s --watch\n"+
			"  relq dead ls %s\n"+
			"  relq dead requeue %s --all\n"+
			"The next demo run deletes the keys of that prefix first.\n", opts.prefix, flags, flags, group, group)
	} else {
		d.printf("\nThis Redis goes away when the demo exits; set REDIS_URL to keep the dead letter for inspection.\n")
	}
	return nil
}

func (d *demo) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format, args...)
}

func (d *demo) since(t time.Time) string {
	return fmt.Sprintf("+%.2fs", t.Sub(d.start).Seconds())
}

// errorLogger forwards only errors: the demo narrates everything else itself.
type errorLogger struct{ watermill.LoggerAdapter }

func (l errorLogger) Info(string, watermill.LogFields)  {}
func (l errorLogger) Debug(string, watermill.LogFields) {}
func (l errorLogger) Trace(string, watermill.LogFields) {}
func (l errorLogger) With(f watermill.LogFields) watermill.LoggerAdapter {
	return errorLogger{l.LoggerAdapter.With(f)}
}
