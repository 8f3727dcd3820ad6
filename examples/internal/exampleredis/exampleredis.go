// Package exampleredis gives the runnable examples a Redis: the server of a URL (REDIS_URL),
// or, without one, a private redis-server found on PATH, started for the run and stopped when
// it ends. It also deletes what an earlier run left under an example's key prefix, so that
// every run prints the same.
package exampleredis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
)

// Connect returns a client for url, or, when url is empty, for a private redis-server from
// PATH listening on a Unix socket in a temporary directory (no persistence). The returned
// close function closes the client and stops that server.
func Connect(ctx context.Context, url string) (*redis.Client, func(), error) {
	if url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		client := redis.NewClient(opt)
		if err := client.Ping(ctx).Err(); err != nil {
			_ = client.Close()
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		return client, func() { _ = client.Close() }, nil
	}
	return startPrivate(ctx)
}

func startPrivate(ctx context.Context) (*redis.Client, func(), error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil, errors.New("set REDIS_URL (for example redis://localhost:6379) or put redis-server on PATH")
	}
	dir, err := os.MkdirTemp("", "relq-example-*")
	if err != nil {
		return nil, nil, err
	}
	socket := filepath.Join(dir, "redis.sock")
	var log bytes.Buffer
	cmd := exec.Command(path, "--port", "0", "--unixsocket", socket, "--dir", dir,
		"--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	client := redis.NewClient(&redis.Options{Network: "unix", Addr: socket})
	stop := func() {
		_ = client.Close()
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = os.RemoveAll(dir)
	}

	// Poll until the server answers: it needs a few milliseconds to open its socket.
	deadline := time.Now().Add(10 * time.Second)
	for client.Ping(ctx).Err() != nil {
		select {
		case <-exited:
			stop()
			return nil, nil, fmt.Errorf("redis-server exited at startup:\n%s", log.String())
		case <-ctx.Done():
			stop()
			return nil, nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, errors.New("redis-server did not start within 10s")
		}
	}
	fmt.Fprintf(os.Stderr, "REDIS_URL is not set: using a private redis-server on %s, stopped at exit\n", socket)
	return client, stop, nil
}

// DeletePrefix deletes every key under a relq key prefix: the keys of every topic,
// "{prefix:<topic>}...". Prefixes cannot hold glob characters, so the pattern matches this
// prefix only.
func DeletePrefix(ctx context.Context, client *redis.Client, prefix string) error {
	iter := client.Scan(ctx, 0, "{"+prefix+":*", 500).Iterator()
	for iter.Next(ctx) {
		if err := client.Unlink(ctx, iter.Val()).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}
