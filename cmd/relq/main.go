// Command relq is the relq command line tool; the commands live in internal/cli.
package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/internal/cli"
)

// quiet drops go-redis's own log lines (dial retries, ...): the commands report the errors
// that matter themselves.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{
		Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv, LookPath: exec.LookPath,
	})
	stop()
	os.Exit(code)
}
