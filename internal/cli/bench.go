package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/partition"

	"github.com/spf13/cobra"

	"github.com/relq/relq/benchmarks"
)

type benchOptions struct {
	redisURL string
	json     bool
	svg      string
	quick    bool
	scale    bool
	rounds   int
	// partitions, when positive, measures partitioned topics of that many partitions on the
	// Cluster --redis-url names, instead of the usual run.
	partitions int
}

func newBenchCommand(env Env) *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the three relq backends against watermill-redisstream on one Redis",
		Long: `bench measures, in one run against one Redis server, relq's list, zset and streams
backends and watermill-redisstream v1.4.5 (default config), the adapter a Watermill user
would pick today: publish throughput (1 and 100 messages per call, and 1 per call from 16
goroutines sharing one Publisher), consume+ack throughput (4 subscribers, relq Concurrency 8),
end-to-end throughput at 1, 4 and 16 subscribers (from a pre-filled backlog, and while a
producer publishes), pickup latency for an idle subscriber at 500 msg/s, lateness of delayed
messages, recovery after a consumer dies holding a message, Redis memory per queued message,
the commands an idle subscriber costs, and (zset, the backend with priorities) how soon a
high-priority message reaches a handler behind 100,000 due ones; and redis-benchmark's LPUSH
rate (-P 16) as the physical reference.

For publishing and consume+ack it also reports what Redis spent per message: CPU (INFO cpu)
and commands run (INFO commandstats, the commands inside scripts included), by command in
--json.

The machine's speed drifts, so the figures that feed ratios and targets (publish,
consume+ack, end-to-end, and their Redis costs) are measured in interleaved rounds (--rounds,
3 by default): a round measures one figure for every target back to back, in an order that
rotates from round to round. The table gives each figure's median and, next to each ratio to
redisstream, the lowest and highest per-round ratio, e.g. "×0.62 (0.58–0.70)"; a ratio is the
median of the per-round ratios, and a target counts as met only if the median meets it.
--json has every round's value. redis-benchmark runs before and after the rounds; the
batched-publish target is judged on the mean of the two.

The scale phase (--scale, on by default) builds, per relq backend, 100,000 messages in
flight, 1,000,000 delayed, 100,000 dead letters and 10,000 topics, runs every hot and
periodic path and reports the slowest single Redis call of each (SLOWLOG). The last section
judges the project's targets on the figures.

Redis: $REDIS_URL if set (use a server nobody else is using: the cost, idle and memory
figures read server-wide counters, and the scale phase sets SLOWLOG's config for a while);
else a private redis-server found on PATH. The embedded miniredis the demo falls back to is
refused: it says nothing about Redis's speed.

Every measurement uses its own key prefix (relqbench-...) or stream and deletes its keys.
Progress goes to stderr; the table (or --json) to stdout. The default run takes about three
minutes on two idle cores (up to about six on a busy machine), half of it the rounds and a
sixth the scale phase (--scale=false leaves it out); --quick is a small run of one round,
for tests, whose figures mean little.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from := "--redis-url"
			if opts.redisURL == "" {
				opts.redisURL, from = env.Getenv("REDIS_URL"), "REDIS_URL"
			}
			if opts.partitions != 0 {
				return benchPartitions(cmd, env, opts, from)
			}
			lookPath := env.LookPath
			if lookPath == nil {
				lookPath = exec.LookPath
			}
			if opts.redisURL == "" {
				if _, err := lookPath("redis-server"); err != nil {
					return errors.New("relq: bench needs a real Redis: set REDIS_URL or put redis-server on PATH " +
						"(the embedded miniredis is not a fair server for benchmarks)")
				}
			}
			conn, err := connectRedis(cmd.Context(), opts.redisURL, from, lookPath)
			if err != nil {
				return err
			}
			defer conn.Close()
			if conn.kind == "embedded" { // connectRedis fell back after all
				return errors.New("relq: bench refuses the embedded miniredis: set REDIS_URL or put redis-server on PATH")
			}
			cfg := benchmarks.Config{}
			if opts.quick {
				cfg = benchmarks.QuickConfig()
			}
			cfg.SkipScale = !opts.scale
			if opts.rounds > 0 {
				cfg.Rounds = opts.rounds
			}
			cfg.Progress = env.Err
			if path, err := lookPath("redis-benchmark"); err == nil {
				cfg.RedisBenchmark = path
			}
			fmt.Fprintf(env.Err, "relq bench: Redis %s\n", conn.describe)
			rep, err := benchmarks.Run(cmd.Context(), conn.client, conn.describe, cfg)
			if err != nil {
				return err
			}
			if opts.svg != "" {
				f, err := os.Create(opts.svg)
				if err != nil {
					return err
				}
				if err := errors.Join(rep.WriteSVG(f), f.Close()); err != nil {
					return fmt.Errorf("write %s: %w", opts.svg, err)
				}
				fmt.Fprintf(env.Err, "relq bench: chart written to %s\n", opts.svg)
			}
			out := cmd.OutOrStdout()
			if opts.json {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return rep.WriteTable(out)
		},
	}
	cmd.Flags().StringVar(&opts.redisURL, "redis-url", "", "Redis URL (default $REDIS_URL)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON instead of a table")
	cmd.Flags().StringVar(&opts.svg, "svg", "", "also write an SVG bar chart of throughput and latency to this file")
	cmd.Flags().BoolVar(&opts.quick, "quick", false, "a small, fast run (for tests; figures mean little)")
	cmd.Flags().IntVar(&opts.rounds, "rounds", 0, "interleaved rounds of the publish, consume+ack and end-to-end figures (default 3; 1 with --quick)")
	cmd.Flags().IntVar(&opts.partitions, "partitions", 0, "measure partitioned topics of this many partitions on the Redis Cluster --redis-url names (see docs/partitions.md), instead of the usual run")
	cmd.Flags().BoolVar(&opts.scale, "scale", true, "run the scale phase: the slowest Redis call of each path on a big group (relq backends)")
	return cmd
}

// benchPartitions runs the partitioned-topic measurement on a Cluster of at least two
// primaries: the one figure that needs several primaries to mean anything.
func benchPartitions(cmd *cobra.Command, env Env, opts benchOptions, from string) error {
	if opts.partitions < 2 || opts.partitions > partition.Max {
		return usageError(cmd, fmt.Sprintf("--partitions %d: want 2 to %d", opts.partitions, partition.Max))
	}
	if opts.redisURL == "" {
		return errors.New("relq: bench --partitions needs a Redis Cluster: pass --redis-url (or REDIS_URL) naming one of its nodes")
	}
	copt, err := redis.ParseClusterURL(opts.redisURL)
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	ctx := cmd.Context()
	cc := redis.NewClusterClient(copt)
	defer cc.Close()
	var (
		mu        sync.Mutex
		primaries []*redis.Client
	)
	if err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		primaries = append(primaries, c)
		return nil
	}); err != nil {
		return fmt.Errorf("relq: bench --partitions: %s is no reachable Redis Cluster: %w", from, err)
	}
	if len(primaries) < 2 {
		return fmt.Errorf("relq: bench --partitions: the Cluster has %d primary; a partitioned topic spreads over several", len(primaries))
	}
	n := 30000
	if opts.quick {
		n = 600
	}
	rep, err := benchmarks.RunPartitions(ctx, cc, primaries, opts.partitions, n, env.Err)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if opts.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(out)
}
