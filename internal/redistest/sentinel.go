package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name under which the sentinels of StartSentinel monitor the primary,
// the FailoverOptions.MasterName of their clients.
const SentinelMaster = "relq"

// Sentinel is a primary with replicas watched by Redis Sentinel processes, all private
// servers on loopback. The sentinels run the same redis-server binary in sentinel mode
// (`redis-server <conf> --sentinel`), so no redis-sentinel package is needed.
type Sentinel struct {
	Nodes     []*Server // data nodes: the initial primary first, then its replicas
	Sentinels []*Server // sentinel processes
}

// SentinelOptions configure StartSentinel. The defaults make a failover take a few seconds.
type SentinelOptions struct {
	// Replicas defaults to 1.
	Replicas int
	// Sentinels defaults to 3; Quorum (sentinels that must agree the primary is down) to a
	// majority of them.
	Sentinels int
	Quorum    int
	// DownAfter is down-after-milliseconds: how long the primary must be unreachable before a
	// sentinel considers it down. Defaults to 1s.
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout: a failover that stalls longer is given up, and a
	// sentinel tries again only twice as long after its last attempt or vote, which is what an
	// election with split votes costs. Defaults to 2s.
	FailoverTimeout time.Duration
}

// StartSentinel starts the data nodes (replicas replicating from the primary) and the
// sentinels, and waits until the deployment is healthy (see WaitHealthy). Every process is
// stopped when t ends.
func StartSentinel(t testing.TB, opts SentinelOptions) *Sentinel {
	t.Helper()
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.Sentinels == 0 {
		opts.Sentinels = 3
	}
	if opts.Quorum == 0 {
		opts.Quorum = opts.Sentinels/2 + 1
	}
	if opts.DownAfter == 0 {
		opts.DownAfter = time.Second
	}
	if opts.FailoverTimeout == 0 {
		opts.FailoverTimeout = 2 * time.Second
	}
	primary := Start(t, Options{})
	d := &Sentinel{Nodes: []*Server{primary}}
	for range opts.Replicas {
		d.Nodes = append(d.Nodes, Start(t, Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port)}}))
	}
	for range opts.Sentinels {
		s, err := startSentinelProcess(t.TempDir(), primary.Port, opts)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		d.Sentinels = append(d.Sentinels, s)
	}
	if _, err := d.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return d
}

// startSentinelProcess starts one sentinel monitoring the primary on primaryPort, on a free
// port (another one if a process took the port before the sentinel bound it).
func startSentinelProcess(dir string, primaryPort int, opts SentinelOptions) (*Server, error) {
	for attempt := 1; ; attempt++ {
		port, err := freePort(false)
		if err != nil {
			return nil, err
		}
		// The sentinel rewrites this file (its ID, the replicas and sentinels it found), so it
		// lives in the sentinel's own directory.
		conf := strings.Join([]string{
			"bind 127.0.0.1",
			"port " + strconv.Itoa(port),
			"dir " + dir,
			"protected-mode no",
			"loglevel notice", // failover events (+sdown, +switch-master) for a failing test
			"logfile " + filepath.Join(dir, "redis.log"),
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", SentinelMaster, primaryPort, opts.Quorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, opts.DownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, opts.FailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
		}, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(conf), 0o600); err != nil {
			return nil, err
		}
		s := &Server{Port: port, Dir: dir, extra: []string{"--sentinel"}}
		err = s.Start()
		if err == nil {
			return s, nil
		}
		if attempt == 5 || !strings.Contains(err.Error(), "Address already in use") {
			return nil, err
		}
	}
}

// SentinelAddrs returns every sentinel's host:port.
func (d *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(d.Sentinels))
	for i, s := range d.Sentinels {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a go-redis failover client (redis.NewFailoverClient) for the deployment,
// closed when t ends: it asks the sentinels for the primary's address on every dial, and drops
// its connections to the old primary when a sentinel announces a new one.
func (d *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: d.SentinelAddrs()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Node returns the data node listening on addr, or nil.
func (d *Sentinel) Node(addr string) *Server {
	for _, s := range d.Nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// WaitHealthy waits until the deployment is healthy and returns its primary: every sentinel
// names the same running node as primary and sees it up, knows every other sentinel, and sees
// every other running node as its replica with the replication link up; that node serves as
// primary and the others replicate from it. A node that is stopped is left out, so right after
// a failover the deployment is healthy without the failed primary.
func (d *Sentinel) WaitHealthy(timeout time.Duration) (*Server, error) {
	return d.wait(timeout, nil)
}

// WaitFailover waits until the deployment is healthy with a primary other than old, as after
// the sentinels failed old over, and returns that primary.
func (d *Sentinel) WaitFailover(old *Server, timeout time.Duration) (*Server, error) {
	return d.wait(timeout, old)
}

func (d *Sentinel) wait(timeout time.Duration, old *Server) (*Server, error) {
	deadline := time.Now().Add(timeout)
	for {
		primary, bad := d.unhealthy()
		if bad == "" && old != nil && primary == old {
			bad = "the sentinels still name " + old.Addr() + " as primary"
		}
		if bad == "" {
			return primary, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("redistest: sentinel deployment not healthy after %v: %s\n%s", timeout, bad, d.logTails(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTails returns the last n lines of every sentinel's log, where the failover events are.
func (d *Sentinel) logTails(n int) string {
	var b strings.Builder
	for _, s := range d.Sentinels {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
		lines := strings.Split(strings.TrimSpace(string(log)), "\n")
		fmt.Fprintf(&b, "sentinel %s:\n%s\n", s.Addr(), strings.Join(lines[max(0, len(lines)-n):], "\n"))
	}
	return b.String()
}

// unhealthy returns the primary, or a reason why the deployment is not healthy yet.
func (d *Sentinel) unhealthy() (*Server, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var primary *Server
	for _, s := range d.Sentinels {
		p, bad := d.sentinelView(ctx, s, primary)
		if bad != "" {
			return nil, fmt.Sprintf("sentinel %s: %s", s.Addr(), bad)
		}
		primary = p
	}
	for _, n := range d.Nodes {
		if !n.Running() {
			continue
		}
		want := "role:master"
		if n != primary {
			want = fmt.Sprintf("master_port:%d\r\nmaster_link_status:up", primary.Port)
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		info, err := cl.Info(ctx, "replication").Result()
		_ = cl.Close()
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", n.Addr(), err)
		}
		if !strings.Contains(info, want) {
			return nil, fmt.Sprintf("%s: %s", n.Addr(), firstLines(info, 6))
		}
	}
	return primary, ""
}

// sentinelView checks what one sentinel sees, and returns the primary it names; agree, when
// set, is the primary the sentinels asked before named.
func (d *Sentinel) sentinelView(ctx context.Context, s *Server, agree *Server) (*Server, string) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer sc.Close()
	addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return nil, err.Error()
	}
	primary := d.Node(strings.Join(addr, ":"))
	switch {
	case primary == nil:
		return nil, fmt.Sprintf("names %v as primary, not a data node", addr)
	case agree != nil && primary != agree:
		return nil, fmt.Sprintf("names %s as primary, another sentinel %s", primary.Addr(), agree.Addr())
	case !primary.Running():
		return nil, fmt.Sprintf("names %s as primary, which is stopped", primary.Addr())
	}
	m, err := sc.Master(ctx, SentinelMaster).Result()
	if err != nil {
		return nil, err.Error()
	}
	if m["flags"] != "master" {
		return nil, "primary flags " + m["flags"]
	}
	if want := strconv.Itoa(len(d.Sentinels) - 1); m["num-other-sentinels"] != want {
		return nil, fmt.Sprintf("knows %s other sentinels, not %s", m["num-other-sentinels"], want)
	}
	replicas, err := sc.Replicas(ctx, SentinelMaster).Result()
	if err != nil {
		return nil, err.Error()
	}
	for _, n := range d.Nodes {
		if n == primary || !n.Running() {
			continue
		}
		i := slices.IndexFunc(replicas, func(r map[string]string) bool { return r["name"] == n.Addr() })
		if i < 0 {
			return nil, "does not know replica " + n.Addr()
		}
		if r := replicas[i]; r["flags"] != "slave" || r["master-link-status"] != "ok" || r["master-port"] != strconv.Itoa(primary.Port) {
			return nil, fmt.Sprintf("sees replica %s with flags %s, link %s, primary port %s", n.Addr(), r["flags"], r["master-link-status"], r["master-port"])
		}
	}
	return primary, ""
}
