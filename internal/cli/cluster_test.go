package cli

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

// On a Redis Cluster the topics lie on several primaries; topics and stats find them all,
// whether the URL names one node (the Cluster is detected) or --cluster says so with seeds.
func TestToolsOnRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: -1})
	addrs := cluster.Addrs()
	f := newFixtureOn(t, "redis://"+addrs[0], cluster.Client(t))
	for i := range 4 {
		f.publish(f.list, fmt.Sprintf("list-%d", i), i+1, 0)
		f.publish(f.zset, fmt.Sprintf("zset-%d", i), i+1, 0)
		f.publish(f.stream, fmt.Sprintf("streams-%d", i), i+1, 0)
	}

	code, out, _ := f.run("topics")
	require.Equal(t, 0, code)
	for i := range 4 {
		for _, b := range backendNames {
			require.Regexp(t, fmt.Sprintf(`(?m)^%s\s+%s-%d\s+default$`, b, b, i), out)
		}
	}
	require.Len(t, regexp.MustCompile(`(?m)^(list|zset|streams)\s`).FindAllString(out, -1), 12)

	seeds := fmt.Sprintf("redis://%s?addr=%s", addrs[1], addrs[2])
	code, out, _ = f.run("stats", "--cluster", "--redis-url", seeds)
	require.Equal(t, 0, code)
	for i := range 4 {
		for _, b := range backendNames {
			//                                   ready                  published
			require.Regexp(t, fmt.Sprintf(`(?m)^%s\s+%s-%d\s+default\s+%d\s+0\s+0\s+0\s`, b, b, i, i+1), out)
			require.Regexp(t, fmt.Sprintf(`(?m)^%s\s+%s-%d\s+default\s+%d\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0$`, b, b, i, i+1), out)
		}
	}

	code, out, _ = f.run("dead", "ls", "--topic", "zset-3", "--group", "default")
	require.Equal(t, 0, code)
	require.Contains(t, out, "No dead letters in zset-3/default (zset backend")
}
