package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// redisConn is the Redis a command talks to and how to let go of it.
type redisConn struct {
	client *redis.Client
	// kind is "url", "server" or "embedded".
	kind string
	// describe says in one line which Redis this is, for the user.
	describe string
	close    func()
}

func (c *redisConn) Close() {
	_ = c.client.Close()
	if c.close != nil {
		c.close()
	}
}

// connectRedis picks a Redis: the URL if given (from names where it came from); else a
// private redis-server found on PATH; else an embedded in-process miniredis.
func connectRedis(ctx context.Context, url, from string, lookPath func(string) (string, error)) (*redisConn, error) {
	if url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		c := redis.NewClient(opt)
		if err := c.Ping(ctx).Err(); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s %s: %w", from, redactURL(url), err)
		}
		desc := fmt.Sprintf("%s (Redis %s, from %s)", redactURL(url), serverVersion(ctx, c), from)
		return &redisConn{client: c, kind: "url", describe: desc}, nil
	}
	if path, err := lookPath("redis-server"); err == nil {
		return startRedisServer(ctx, path)
	}
	return startEmbedded()
}

// redactURL hides a password in a Redis URL before it is printed.
func redactURL(url string) string {
	opt, err := redis.ParseURL(url)
	if err != nil || opt.Password == "" {
		return url
	}
	return strings.Replace(url, opt.Password, "xxxxx", 1)
}

// serverVersion reads redis_version from INFO server, or "version unknown".
func serverVersion(ctx context.Context, c *redis.Client) string {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "version unknown"
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "redis_version:"); ok {
			return v
		}
	}
	return "version unknown"
}

// startRedisServer runs redis-server in a temporary directory on a free loopback port,
// without persistence, and stops it (and removes the directory) on Close.
func startRedisServer(ctx context.Context, path string) (*redisConn, error) {
	dir, err := os.MkdirTemp("", "relq-demo-redis-*")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	logFile := filepath.Join(dir, "redis.log")
	cmd := exec.Command(path,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no",
		"--logfile", logFile)
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = os.RemoveAll(dir) // if it is still there (startup failed)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr})
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err = c.Ping(pctx).Err()
		cancel()
		if err == nil {
			break
		}
		select {
		case <-exited:
			err = errors.New("redis-server exited")
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil || isClosed(exited) {
			_ = c.Close()
			log, _ := os.ReadFile(logFile)
			stop()
			return nil, fmt.Errorf("redis-server on %s not ready: %v\n%s", addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Without persistence the server writes nothing more to its directory, so remove it now:
	// then nothing is left behind even if this process is killed (the kernel kills the
	// server with it, see childProcAttr).
	_ = os.RemoveAll(dir)
	desc := fmt.Sprintf("redis-server %s from %s on %s (private temp dir, no persistence, stopped at exit)",
		serverVersion(ctx, c), path, addr)
	return &redisConn{client: c, kind: "server", describe: desc, close: stop}, nil
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// startEmbedded runs miniredis in this process.
func startEmbedded() (*redisConn, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("embedded miniredis: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	desc := fmt.Sprintf("embedded in-process miniredis on %s (no REDIS_URL, no redis-server on PATH)", m.Addr())
	return &redisConn{client: c, kind: "embedded", describe: desc, close: m.Close}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cleanPrefix deletes every key of prefix: the hash-tagged keys "{prefix:<topic>}..." and
// any key "prefix:...". Prefix names cannot hold glob characters (backend.ValidateName), so
// the patterns match this prefix only.
func cleanPrefix(ctx context.Context, c *redis.Client, prefix string) (int, error) {
	deleted := 0
	for _, pattern := range []string{"{" + prefix + ":*", prefix + ":*"} {
		iter := c.Scan(ctx, 0, pattern, 500).Iterator()
		var batch []string
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			n, err := c.Del(ctx, batch...).Result()
			deleted += int(n)
			batch = batch[:0]
			return err
		}
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 500 {
				if err := flush(); err != nil {
					return deleted, err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return deleted, err
		}
		if err := flush(); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
