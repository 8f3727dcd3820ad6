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
	// In is where commands read answers (confirmations, "more"). Defaults to os.Stdin.
	In io.Reader
	// IsTerminal reports whether an output is a terminal, where stats --watch redraws the
	// screen rather than printing one table after another, and msg ls asks before each next
	// page. Defaults to asking the terminal driver about an *os.File (any other writer is no
	// terminal).
	IsTerminal func(io.Writer) bool
	// InIsTerminal reports whether In is a terminal: only there can someone see a question,
	// so a destructive command given no --yes refuses when it is not. Defaults as IsTerminal.
	InIsTerminal func(io.Reader) bool
	// Width is an output's width in columns, to which tables cut their last column (a reason,
	// a payload); 0 when unknown (a pipe, a file), where rows stay whole. Defaults to the
	// terminal's width.
	Width func(io.Writer) int

	// dial, when set, replaces the connection of the tool commands: tests of what the Admin
	// verbs print, on an in-memory Admin.
	dial func(ctx context.Context, o *connOptions) (*session, error)
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
	if env.InIsTerminal == nil {
		env.InIsTerminal = isTerminalReader
	}
	if env.Width == nil {
		env.Width = terminalWidth
	}
	root := &cobra.Command{
		Use:           "relq",
		Short:         "relq: reliable Watermill delivery on Redis",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(env.Out)
	root.SetErr(env.Err)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newDemoCommand(env))
	root.AddCommand(newBenchCommand(env))
	root.AddCommand(newTopicsCommand(env))
	root.AddCommand(newStatsCommand(env))
	root.AddCommand(newTopicCommand(env))
	root.AddCommand(newGroupCommand(env))
	root.AddCommand(newMsgCommand(env))
	root.AddCommand(newDeadCommand(env))
	root.AddCommand(newWebCommand(env))
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
