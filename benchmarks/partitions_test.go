package benchmarks_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/benchmarks"
	"github.com/relq/relq/internal/redistest"
)

// BenchmarkPartitionsOnCluster prints, for each backend on a 3-primary Cluster, the table of
// `relq bench --partitions`: what each primary spends per message on a topic of 12 partitions,
// ordered and not, and on the same topic unpartitioned; the busiest primary's share of CPU and
// commands, the ceiling ratio, and the takeover time.
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
	for range b.N {
		rep, err := benchmarks.RunPartitions(context.Background(), cc, primaries, 12, 30000, os.Stderr)
		require.NoError(b, err)
		require.NoError(b, rep.WriteTable(os.Stdout))
	}
}
