package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster of private servers on loopback: Masters primaries with
// ReplicasPerMaster replicas each, created with `redis-cli --cluster create`.
type Cluster struct {
	Nodes []*Server // the first Masters are the initial primaries
}

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// Masters defaults to 3.
	Masters int
	// ReplicasPerMaster defaults to 1; set -1 for none.
	ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout: how soon a dead primary is failed over.
	// Defaults to 1s.
	NodeTimeout time.Duration
	// AOF and AppendFsync as in Options.
	AOF         bool
	AppendFsync string
	// Args are more redis-server arguments for every node (for instance
	// "--cluster-require-full-coverage", "no").
	Args []string
}

// StartCluster starts a cluster and waits until every node reports cluster_state:ok. The
// nodes are stopped when t ends.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.Masters == 0 {
		opts.Masters = 3
	}
	switch {
	case opts.ReplicasPerMaster == 0:
		opts.ReplicasPerMaster = 1
	case opts.ReplicasPerMaster < 0:
		opts.ReplicasPerMaster = 0
	}
	if opts.NodeTimeout == 0 {
		opts.NodeTimeout = time.Second
	}
	n := opts.Masters * (1 + opts.ReplicasPerMaster)
	c := &Cluster{}
	addrs := make([]string, 0, n)
	for range n {
		s := Start(t, Options{AOF: opts.AOF, AppendFsync: opts.AppendFsync, Args: append([]string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(opts.NodeTimeout.Milliseconds(), 10),
		}, opts.Args...)})
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(opts.ReplicasPerMaster), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// Addrs returns every node's host:port.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a cluster client, closed when t ends. Its slot map is reloaded every
// second: go-redis does not reload it when a node stops answering, only on MOVED/READONLY
// replies and every ClusterStateReloadInterval (60 s by default), so after a failover a client
// with the default keeps calling the dead primary for up to a minute.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// WaitHealthy waits until every running node reports cluster_state:ok and all 16384 slots
// are served, as after creation or a failover.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		bad := c.unhealthy()
		if bad == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not healthy after %v: %s", timeout, bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) unhealthy() string {
	ctx := context.Background()
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		info, err := cl.ClusterInfo(ctx).Result()
		var slots []redis.ClusterSlot
		if err == nil {
			slots, err = cl.ClusterSlots(ctx).Result()
		}
		_ = cl.Close()
		if err != nil {
			return fmt.Sprintf("%s: %v", s.Addr(), err)
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return fmt.Sprintf("%s: %s", s.Addr(), firstLines(info, 3))
		}
		// Right after a primary dies the others still list it: healthy means every slot is
		// served by a primary that is running.
		for _, sl := range slots {
			if len(sl.Nodes) == 0 || !c.running(sl.Nodes[0].Addr) {
				return fmt.Sprintf("%s: slots %d-%d served by a stopped node", s.Addr(), sl.Start, sl.End)
			}
		}
	}
	return ""
}

func (c *Cluster) running(addr string) bool {
	for _, s := range c.Nodes {
		if s.Addr() == addr {
			return s.Running()
		}
	}
	return false
}

// Primaries returns the running nodes that currently serve slots as primaries.
func (c *Cluster) Primaries() ([]*Server, error) {
	ctx := context.Background()
	var out []*Server
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		role, err := cl.Do(ctx, "ROLE").Slice()
		_ = cl.Close()
		if err != nil {
			return nil, err
		}
		if len(role) > 0 && role[0] == "master" {
			out = append(out, s)
		}
	}
	return out, nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " ")
}
