package benchmarks

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// PartitionReport is what `relq bench --partitions` measures on a Cluster, per relq backend:
// one topic unpartitioned, the same topic over P partitions, and over P partitions consumed in
// order, each with what every primary spent; and how soon a group's surviving member takes a
// dead member's partitions over.
type PartitionReport struct {
	Primaries  int                   `json:"primaries"`
	Partitions int                   `json:"partitions"`
	Messages   int                   `json:"messages"`
	Backends   []PartitionBackendRun `json:"backends"`
}

// PartitionBackendRun is one backend's figures.
type PartitionBackendRun struct {
	Backend   string        `json:"backend"`
	One       PartitionCost `json:"one_partition"`
	Spread    PartitionCost `json:"partitioned"`
	Ordered   PartitionCost `json:"partitioned_ordered"`
	Lease     time.Duration `json:"takeover_lease_ns"`
	Takeover  time.Duration `json:"takeover_ns"`
	CeilingX  float64       `json:"ceiling_ratio"`
	CommandsX float64       `json:"commands_ceiling_ratio"`
}

// Targets of issue 22, judged on the figures: the busiest primary's share at most 40% (even
// over 3 primaries is 33%), the ceiling at least 2.5 times one partition's, a takeover within
// the lease plus 0.3 s.
const (
	partitionShareTarget    = 0.40
	partitionCeilingTarget  = 2.5
	partitionTakeoverTarget = 300 * time.Millisecond
)

// RunPartitions measures every relq backend on cluster, whose primaries are given, with p
// partitions and n messages per measurement.
func RunPartitions(ctx context.Context, cluster *redis.ClusterClient, primaries []*redis.Client, p, n int, progress io.Writer) (PartitionReport, error) {
	rep := PartitionReport{Primaries: len(primaries), Partitions: p, Messages: n}
	const lease = time.Second
	for _, t := range Targets() {
		if t.Baseline() {
			continue
		}
		run := PartitionBackendRun{Backend: t.Name, Lease: lease}
		var err error
		for _, m := range []struct {
			into    *PartitionCost
			p       int
			ordered bool
		}{{&run.One, 1, false}, {&run.Spread, p, false}, {&run.Ordered, p, true}} {
			if progress != nil {
				fmt.Fprintf(progress, "relq bench: %s, %d partition(s), ordered %v\n", t.Name, m.p, m.ordered)
			}
			if *m.into, err = MeasurePartitions(ctx, cluster, primaries, t, m.p, n, m.ordered); err != nil {
				return rep, fmt.Errorf("%s, %d partitions: %w", t.Name, m.p, err)
			}
		}
		if run.Takeover, err = MeasureTakeover(ctx, cluster, "relqbench-takeover-"+t.Name, t, p, lease); err != nil {
			return rep, fmt.Errorf("%s takeover: %w", t.Name, err)
		}
		run.CeilingX = run.Spread.Ceiling() / run.One.Ceiling()
		run.CommandsX = run.One.Busiest().CommandsPerMessage / max(run.Spread.Busiest().CommandsPerMessage, 1e-9)
		rep.Backends = append(rep.Backends, run)
	}
	return rep, nil
}

// WriteTable prints the report, each target read as met or missed.
func (r PartitionReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Partitioned topics on a Cluster of %d primaries: %d messages per run, 3 subscribers (Concurrency 8), 8 publishers (batches of 50).\n", r.Primaries, r.Messages)
	fmt.Fprintf(w, "Busiest primary: the one that spent the most Redis CPU per message; its share of the Cluster's CPU and commands (even: %.0f%%).\n\n", 100/float64(max(r.Primaries, 1)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "backend\tpartitions\tordered\tbusiest CPU share\tbusiest command share\tceiling msg/s\tRedis CPU µs/msg (all)\tcommands/msg (all)\twall")
	for _, b := range r.Backends {
		for _, c := range []PartitionCost{b.One, b.Spread, b.Ordered} {
			cpu, cmds := c.Total()
			fmt.Fprintf(tw, "%s\t%d\t%v\t%.0f%%\t%.0f%%\t%.0f\t%.1f\t%.2f\t%v\n", c.Backend, c.Partitions, c.Ordered,
				100*c.CPUShare(), 100*c.CommandShare(), c.Ceiling(), cpu, cmds, c.Elapsed.Round(time.Millisecond))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Targets (a 2-core machine cannot show a Cluster's throughput growing with primaries: the ceiling is 1 / the busiest primary's CPU per message):\n")
	for _, b := range r.Backends {
		share := max(b.Spread.CPUShare(), b.Spread.CommandShare())
		ocpu, ocmd := b.Ordered.Total()
		ucpu, ucmd := b.Spread.Total()
		fmt.Fprintf(w, "  %-7s busiest share %.0f%% (target <= %.0f%%): %s; ceiling x%.2f by CPU, x%.2f by commands (target >= x%.1f): %s;\n",
			b.Backend, 100*share, 100*partitionShareTarget, metOrMissed(share <= partitionShareTarget),
			b.CeilingX, b.CommandsX, partitionCeilingTarget, metOrMissed(b.CeilingX >= partitionCeilingTarget))
		fmt.Fprintf(w, "          ordered / unordered per message: Redis CPU x%.2f, commands x%.2f, wall x%.2f; takeover %v with a %v lease (target <= lease + %v): %s\n",
			ocpu/max(ucpu, 1e-9), ocmd/max(ucmd, 1e-9), float64(b.Ordered.Elapsed)/float64(max(b.Spread.Elapsed, 1)),
			b.Takeover.Round(time.Millisecond), b.Lease, partitionTakeoverTarget, metOrMissed(b.Takeover <= b.Lease+partitionTakeoverTarget))
	}
	return nil
}

func metOrMissed(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}
