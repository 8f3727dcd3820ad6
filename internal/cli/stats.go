package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// clearScreen moves the cursor home and clears the terminal (ANSI), before each live frame.
const clearScreen = "\x1b[H\x1b[2J"

type statsOptions struct {
	conn     connOptions
	topic    string
	group    string
	watch    bool
	interval time.Duration
}

func newStatsCommand(env Env) *cobra.Command {
	var opts statsOptions
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show every group's queue state and counters, once or live",
		Long: `stats prints, for every topic and group under the key prefix (or the one topic and
group asked for), two tables read from Redis, so they are global across processes:

  state:    READY (due, waiting for a consumer), DELAYED (waiting for their due time, nack
            backoff included), PENDING (claimed, not yet acked), DEAD (dead letters),
            OLDEST PENDING and OLDEST READY (how long the oldest of each has waited)
  counters: PUBLISHED, CLAIMED, ACKED, NACKED, RECLAIMED (expired leases), DEAD-LETTERED,
            STALE ACKS and STALE NACKS (from a consumer that had lost the delivery), each
            cumulative since the group was created, and REREGISTERED: how many times its
            subscriptions registered it again after its state vanished from Redis, and how
            long ago the latest was (a WARNING line below the tables says when)

When Redis's maxmemory-policy lets it evict relq's keys (allkeys-*), an ERROR line above
the tables says so: a full Redis then deletes queued messages without any error.

With --watch it reads them again every --interval until interrupted (Ctrl-C): on a
terminal it redraws the screen; otherwise it prints one table after another, each after a
line with the time, for a log.

Redis: --redis-url, else $REDIS_URL, else ` + DefaultRedisURL + `. The URL takes the forms
  redis://[user:password@]host:port[/db]   a single node
  rediss://...                            the same over TLS (--tls-ca to trust a private CA)
  redis://host:port?addr=host2:port2      a Cluster, from one or more nodes (or --cluster)
A Cluster is also detected from the node the URL names. No Redis is started: these commands
inspect the Redis your applications use.`,
		Example: `  relq stats
  relq stats --topic orders --watch
  REDIS_URL=rediss://relq-ops:secret@redis.internal:6380 relq stats --prefix shop --interval 5s --watch`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.interval <= 0 {
				return fmt.Errorf("--interval %v: must be positive", opts.interval)
			}
			if opts.group != "" && opts.topic == "" {
				return errors.New("--group needs --topic")
			}
			ctx := cmd.Context()
			s, err := opts.conn.connect(ctx, env)
			if err != nil {
				return err
			}
			defer s.Close()
			out := cmd.OutOrStdout()
			if !opts.watch {
				rows, err := s.stats(ctx, opts.topic, opts.group)
				if err != nil {
					return err
				}
				writeEviction(ctx, out, s)
				return writeStats(out, s, rows)
			}
			return watchStats(ctx, out, env.IsTerminal(out), s, &opts)
		},
	}
	opts.conn.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&opts.topic, "topic", "", "only this topic")
	f.StringVar(&opts.group, "group", "", "only this group of --topic")
	f.BoolVarP(&opts.watch, "watch", "w", false, "read and print again every --interval until interrupted")
	f.DurationVar(&opts.interval, "interval", time.Second, "time between two reads with --watch")
	return cmd
}

// statsRow is the state of one group.
type statsRow struct {
	ref topicRef
	st  backend.Stats
}

// stats reads the stats of every group of every topic, or of topic (and group) only.
func (s *session) stats(ctx context.Context, topic, group string) ([]statsRow, error) {
	var refs []topicRef
	if topic != "" {
		ref, err := s.resolve(ctx, topic)
		if err != nil {
			return nil, err
		}
		refs = []topicRef{ref}
	} else {
		var err error
		if refs, err = s.discover(ctx); err != nil {
			return nil, err
		}
	}
	var rows []statsRow
	for _, ref := range refs {
		groups, err := s.groups(ctx, ref, group)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			if (group != "" && g != group) || backend.ValidateName("group", g) != nil {
				continue // another program's consumer group (streams) that relq cannot read
			}
			st, err := ref.backend.Stats(ctx, &backend.StatsParams{Topic: ref.topic, Group: g})
			if err != nil {
				return nil, s.explain(fmt.Errorf("stats of %s/%s: %w", ref.topic, g, err))
			}
			rows = append(rows, statsRow{ref: ref, st: st})
		}
	}
	return rows, nil
}

// writeStats prints the state table and the counters table.
func writeStats(w io.Writer, s *session, rows []statsRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "No topics under prefix %q in %s at %s.\n", s.prefix, s.backendsText(), s.where)
		return err
	}
	t := newTable(w, 0, "BACKEND", "TOPIC", "GROUP", "READY", "DELAYED", "PENDING", "DEAD", "OLDEST PENDING", "OLDEST READY")
	for _, r := range rows {
		st := r.st
		group := oneLine(st.Group)
		if st.Paused {
			group += " (paused)"
		}
		t.row(r.ref.label(), st.Topic, group, num(st.Ready), num(st.Delayed), num(st.Pending), num(st.Dead),
			age(st.OldestPendingAge), age(st.OldestReadyAge))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, 0, "BACKEND", "TOPIC", "GROUP", "PUBLISHED", "CLAIMED", "ACKED", "NACKED", "RECLAIMED", "DEAD-LETTERED",
		"STALE ACKS", "STALE NACKS", "REREGISTERED")
	reregistered := false
	for _, r := range rows {
		c := r.st.Counters
		t.row(r.ref.label(), r.st.Topic, oneLine(r.st.Group), num(c.Published), num(c.Claimed), num(c.Acked), num(c.Nacked),
			num(c.Reclaimed), num(c.DeadLettered), num(c.StaleAcks), num(c.StaleNacks), reregCell(r.st))
		reregistered = reregistered || c.Reregistered > 0
	}
	if err := t.flush(); err != nil {
		return err
	}
	if reregistered {
		fmt.Fprintln(w)
		writeReregistered(w, rows)
	}
	return nil
}

// writeEviction prints an error line, above the tables, when Redis's maxmemory-policy can
// evict queue keys: messages lost that way fail no command, so this is where an operator
// would see it. A policy that cannot be read (INFO refused by ACLs) prints nothing.
func writeEviction(ctx context.Context, w io.Writer, s *session) {
	ev, err := backendkit.ReadEviction(ctx, s.client)
	if err != nil {
		return // the stats just read report a Redis that cannot be reached
	}
	if err := ev.Err(); err != nil {
		fmt.Fprintf(w, "ERROR: %s (evicted_keys %d)\n\n", strings.TrimPrefix(err.Error(), "relq: "), ev.EvictedKeys)
	}
}

// watchStats prints the stats every interval until ctx ends, which is a normal end. An error
// in the first frame (an unknown topic, say) ends the watch; a later one, such as Redis
// restarting or failing over, is printed in place of a frame and the watch goes on, unless
// Redis refused the command or the login.
func watchStats(ctx context.Context, out io.Writer, terminal bool, s *session, opts *statsOptions) error {
	ticker := time.NewTicker(opts.interval)
	defer ticker.Stop()
	for frame := 0; ; frame++ {
		rows, err := s.stats(ctx, opts.topic, opts.group)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && (frame == 0 || isPermission(err) || redis.IsAuthError(err)) {
			return err
		}
		now := time.Now().Format("2006-01-02 15:04:05 MST")
		if terminal {
			fmt.Fprintf(out, "%srelq stats: prefix %q at %s, %s, every %v (Ctrl-C to stop)\n\n",
				clearScreen, s.prefix, s.where, now, opts.interval)
		} else {
			fmt.Fprintf(out, "=== %s\n", now)
		}
		if err != nil {
			fmt.Fprintf(out, "error: %v\n(trying again every %v)\n", err, opts.interval)
		} else {
			writeEviction(ctx, out, s)
			if err := writeStats(out, s, rows); err != nil {
				return err
			}
		}
		if !terminal {
			fmt.Fprintln(out)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}
