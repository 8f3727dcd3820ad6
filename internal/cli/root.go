package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Env is what the commands take from the process: input and output streams and the
// environment. Tests fill it with buffers and fakes.
type Env struct {
	Out    io.Writer
	Err    io.Writer
	Getenv func(string) string
	// LookPath finds an executable, as exec.LookPath does.
	LookPath func(string) (string, error)
	// In is where commands read answers (dead purge's confirmation). Defaults to os.Stdin.
	In io.Reader
	// IsTerminal reports whether an output is a terminal, where stats --watch redraws the
	// screen rather than printing one table after another. Defaults to asking the terminal
	// driver about an *os.File (any other writer is no terminal).
	IsTerminal func(io.Writer) bool
}

// NewRootCommand returns the relq command with its subcommands.
func NewRootCommand(env Env) *cobra.Command {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.Err == nil {
		env.Err = io.Discard
	}
	if env.In == nil {
		env.In = os.Stdin
	}
	if env.IsTerminal == nil {
		env.IsTerminal = isTerminal
	}
	root := &cobra.Command{
		Use:           "relq",
		Short:         "relq: reliable Watermill delivery on Redis",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(env.Out)
	root.SetErr(env.Err)
	root.AddCommand(newDemoCommand(env))
	root.AddCommand(newBenchCommand(env))
	root.AddCommand(newTopicsCommand(env))
	root.AddCommand(newStatsCommand(env))
	root.AddCommand(newDeadCommand(env))
	return root
}

// Main runs the relq command with args (without the program name) and returns the process
// exit code.
func Main(ctx context.Context, args []string, env Env) int {
	root := NewRootCommand(env)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "relq: ") { // relq's own errors say so already
			msg = "relq: " + msg
		}
		fmt.Fprintln(env.Err, msg)
		return 1
	}
	return 0
}
