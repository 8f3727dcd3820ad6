package benchmarks_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/benchmarks"
	"github.com/relq/relq/internal/redistest"
)

// BenchmarkPartitionsOnCluster prints, for each backend on a 3-primary Cluster, what each
// primary spends per message on a topic of 12 partitions and on the same topic unpartitioned:
// the busiest primary's share of CPU and commands, and the ceiling ratio.
//
//	go test -run '^$' -bench PartitionsOnCluster -benchtime 1x ./benchmarks/
func BenchmarkPartitionsOnCluster(b *testing.B) {
	cluster := redistest.StartCluster(b, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: -1})
	cc := cluster.Client(b)
	servers, err := cluster.Primaries()
	require.NoError(b, err)
	var primaries []*redis.Client
	for _, s := range servers {
		primaries = append(primaries, s.Client(b))
	}
	const n = 30000
	for range b.N {
		for _, t := range benchmarks.Targets() {
			if t.Baseline() {
				continue
			}
			one, err := benchmarks.MeasurePartitions(context.Background(), cc, primaries, t, 1, n)
			require.NoError(b, err)
			twelve, err := benchmarks.MeasurePartitions(context.Background(), cc, primaries, t, 12, n)
			require.NoError(b, err)
			for _, c := range []benchmarks.PartitionCost{one, twelve} {
				busiest := c.Busiest()
				b.Logf("%-7s P=%-2d busiest primary %.1f µs CPU, %.2f commands per msg; its share: CPU %.0f%%, commands %.0f%%; ceiling %.0f msg/s",
					c.Backend, c.Partitions, busiest.CPUMicrosPerMessage, busiest.CommandsPerMessage, 100*c.CPUShare(), 100*c.CommandShare(), c.Ceiling())
			}
			b.Logf("%-7s ceiling P=12 / P=1: x%.2f by CPU, x%.2f by commands", t.Name, twelve.Ceiling()/one.Ceiling(),
				one.Busiest().CommandsPerMessage/twelve.Busiest().CommandsPerMessage)
			if testing.Verbose() {
				b.Logf("P=1 busiest by command: %v", one.Busiest().ByCommand)
				b.Logf("P=12 busiest by command: %v", twelve.Busiest().ByCommand)
			}
		}
	}
}
