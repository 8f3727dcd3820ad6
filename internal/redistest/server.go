package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options configure a private server.
type Options struct {
	// AOF turns on the append-only file, so data survives Kill and Restart.
	AOF bool
	// AppendFsync is "always", "everysec" or "no". Defaults to "everysec".
	AppendFsync string
	// Args are extra redis-server arguments ("--maxmemory", "10mb", ...).
	Args []string
	// TLS, when set, makes the server accept TLS connections only, with certificates
	// generated into its directory (see TLSOptions); Client and URL then use TLS.
	TLS *TLSOptions
}

// Server is a redis-server process this package started, or an external server given by
// RELQ_TEST_REDIS_URL (External reports which).
type Server struct {
	Port int
	Dir  string

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	url      string
	external bool
	// restartOnExit makes the supervisor start the server again when it exits by itself
	// (the RestartCommand script shut it down); stopping marks exits the harness caused.
	restartOnExit bool
	stopping      bool
	extra         []string
	tls           *tlsFiles // nil without Options.TLS
}

// Start launches a private server and stops it when t ends. It fails t when redis-server is
// missing: the test command installs it, and a skip would hide that.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := start(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func start(dir string, opts Options) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, errors.New("redis-server not found on PATH; run `make test`, which installs it")
	}
	// A free port can be taken by another process before redis-server binds it (and a
	// cluster node also binds port+10000), so a start that lost that race tries another port.
	cluster := slices.Contains(opts.Args, "--cluster-enabled")
	for attempt := 1; ; attempt++ {
		port, err := freePort(cluster)
		if err != nil {
			return nil, err
		}
		s := &Server{Port: port, Dir: dir, extra: opts.Args}
		if err := s.writeConfig(opts); err != nil {
			return nil, err
		}
		err = s.Start()
		if err == nil {
			return s, nil
		}
		if attempt == 5 || !strings.Contains(err.Error(), "Address already in use") {
			return nil, err
		}
		_ = os.Remove(filepath.Join(dir, "nodes.conf")) // written for the port that failed
	}
}

func (s *Server) writeConfig(opts Options) error {
	fsync := opts.AppendFsync
	if fsync == "" {
		fsync = "everysec"
	}
	aof := "no"
	if opts.AOF {
		aof = "yes"
	}
	lines := []string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(s.Port),
		"dir " + s.Dir,
		"save \"\"",
		"appendonly " + aof,
		"appendfsync " + fsync,
		"protected-mode no",
		"repl-diskless-sync-delay 0", // replicas in tests sync at once, not after 5 s
		"loglevel warning",
		"logfile " + filepath.Join(s.Dir, "redis.log"),
	}
	cli := fmt.Sprintf("redis-cli -p %d", s.Port)
	if opts.TLS != nil {
		f, err := writeTLS(s.Dir, *opts.TLS)
		if err != nil {
			return err
		}
		s.tls = f
		// The last "port" line wins: no plain port, TLS on the server's Port.
		lines = append(append(lines, "port 0"), f.configLines(s.Port)...)
		cli += " " + f.cliFlags()
	}
	conf := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(s.Dir, "redis.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	// A restart script for Watermill's RestartServiceCommand, which runs an external command.
	// It sends SIGTERM (Redis fsyncs the AOF and exits) and the harness's own wait loop
	// notices the exit and starts the server again (see Start).
	script := fmt.Sprintf("#!/bin/sh\n%s shutdown >/dev/null 2>&1\n"+
		"i=0; until %s ping >/dev/null 2>&1; do i=$((i+1)); [ $i -gt 200 ] && exit 1; sleep 0.05; done\n",
		cli, cli)
	return os.WriteFile(filepath.Join(s.Dir, "restart.sh"), []byte(script), 0o700)
}

func (s *Server) args() []string {
	return append([]string{filepath.Join(s.Dir, "redis.conf")}, s.extra...)
}

// Running reports whether the server process is up (always true for an external server).
func (s *Server) Running() bool {
	if s.external {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Addr returns host:port.
func (s *Server) Addr() string {
	if s.external {
		opt, _ := redis.ParseURL(s.url)
		return opt.Addr
	}
	return "127.0.0.1:" + strconv.Itoa(s.Port)
}

// URL returns a redis:// URL for the server.
func (s *Server) URL() string {
	if s.external {
		return s.url
	}
	if s.tls != nil {
		return "rediss://" + s.Addr()
	}
	return "redis://" + s.Addr()
}

// External reports a server this package does not control (RELQ_TEST_REDIS_URL).
func (s *Server) External() bool { return s.external }

// Client returns a new client for the server, closed when t ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(s.options(t))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// options are the client options of the server's URL, with its TLS configuration.
func (s *Server) options(t testing.TB) *redis.Options {
	t.Helper()
	opt, err := redis.ParseURL(s.URL())
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if s.tls != nil {
		opt.TLSConfig = s.ClientTLS()
	}
	return opt
}

// RestartCommand returns a command that restarts the server with its data, for Watermill's
// Features.RestartServiceCommand. The server is supervised by this process: the command
// shuts it down and waits until the supervisor has started it again.
func (s *Server) RestartCommand(t testing.TB) []string {
	s.needControl(t)
	s.mu.Lock()
	s.restartOnExit = true
	s.mu.Unlock()
	return []string{"sh", filepath.Join(s.Dir, "restart.sh")}
}

func (s *Server) needControl(t testing.TB) {
	t.Helper()
	if s.external {
		t.Skip("redistest: RELQ_TEST_REDIS_URL is set; this test must stop or restart Redis, which it cannot do to an external server")
	}
}

// Start starts the server process again with the data in its directory (after Stop or Kill)
// and waits until it answers PING.
func (s *Server) Start() error {
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return errors.New("redistest: server already running")
	}
	cmd := exec.Command("redis-server", s.args()...)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	go s.supervise(cmd, done)
	return s.waitReady(10*time.Second, done)
}

// supervise reaps the process; when a RestartCommand asked for it, it starts the server
// again after an exit it did not cause itself.
func (s *Server) supervise(cmd *exec.Cmd, done chan struct{}) {
	_ = cmd.Wait()
	s.mu.Lock()
	restart := s.restartOnExit && s.cmd == cmd && !s.stopping
	if s.cmd == cmd {
		s.cmd = nil
	}
	s.mu.Unlock()
	close(done)
	if restart {
		_ = s.Start()
	}
}

// waitReady waits until the server answers PING, and fails at once if it exited.
func (s *Server) waitReady(timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, TLSConfig: s.ClientTLS()})
	defer c.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("redistest: redis-server on port %d exited before it was ready\n%s", s.Port, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("redistest: redis-server on port %d not ready after %v: %v\n%s", s.Port, timeout, err, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop shuts the server down gracefully (the AOF is flushed) and waits for it to exit.
func (s *Server) Stop() error { return s.signal(syscall.SIGTERM) }

// Kill stops the server with SIGKILL, as a crash would: writes not yet fsynced are lost.
func (s *Server) Kill() error { return s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) error {
	if s.external {
		return errors.New("redistest: cannot stop an external server")
	}
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.stopping = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.stopping = false
		s.mu.Unlock()
	}()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("redistest: redis-server on port %d did not stop on %v", s.Port, sig)
	}
}

// Restart stops the server gracefully and starts it again with its data.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start()
}

// Outage stops the server for d, then starts it again with its data. The server keeps its
// port, so clients reconnect by themselves.
func (s *Server) Outage(d time.Duration) error {
	if err := s.Stop(); err != nil {
		return err
	}
	time.Sleep(d)
	return s.Start()
}

// freePort returns a port nothing listens on; with cluster, one whose cluster bus port
// (port+10000) is free too.
func freePort(cluster bool) (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !cluster {
			l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		l.Close()
		if err == nil {
			bus.Close()
			return port, nil
		}
	}
}
