package cli

// What a mistyped command line gets: the verb's usage line for a missing or extra argument,
// the nearest flag for an unknown one, the nearest verb for an unknown one.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError is msg, then the command's usage line.
func usageError(cmd *cobra.Command, msg string) error {
	return fmt.Errorf("%s\nusage: %s (see %s --help)", msg, cmd.UseLine(), cmd.CommandPath())
}

// argsNamed validates a verb that takes exactly the arguments named (as in its Use line).
func argsNamed(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return usageError(cmd, "missing "+strings.Join(names[len(args):], " "))
		case len(args) > len(names):
			return usageError(cmd, fmt.Sprintf("unexpected argument %q", args[len(names)]))
		}
		return nil
	}
}

// noArgs validates a verb that takes flags only.
var noArgs = argsNamed()

// parentCommand makes cmd, a noun whose verbs are its subcommands, print its help when run
// alone and name the nearest verb when given an unknown one (cobra would print the help and
// exit 0).
func parentCommand(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
		}
		return usageError(cmd, msg)
	}
	return cmd
}

// flagError is the root's FlagErrorFunc: pflag's error, the nearest flag for an unknown one
// (cobra suggests commands only), and the usage line.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	near := ""
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		near = nearestFlag(cmd.Flags(), name)
	} else if _, rest, ok := strings.Cut(msg, "' in -"); ok && strings.HasPrefix(msg, "unknown shorthand flag: ") && len(rest) > 1 {
		// A long flag with one dash: pflag read its first letters as shorthands as far as
		// they are some, and rest is what follows (-yes: -y, then "es").
		near = flagEndingWith(cmd.Flags(), rest)
		if near == "" {
			near = nearestFlag(cmd.Flags(), rest)
		}
	}
	if near != "" {
		msg += fmt.Sprintf(" (did you mean --%s?)", near)
	}
	return usageError(cmd, msg)
}

// nearestFlag is the visible flag of fs whose name is nearest typed: at most 2 edits away,
// or starting with it (3 characters at least), or "" when none is.
func nearestFlag(fs *pflag.FlagSet, typed string) string {
	best, bestDist := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := levenshtein(typed, f.Name)
		if d > 2 && len(typed) >= 3 && strings.HasPrefix(f.Name, typed) {
			d = 2
		}
		if d < bestDist || (d == bestDist && best != "" && f.Name < best) {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// flagEndingWith is the shortest visible flag of fs whose name ends with rest, or "".
func flagEndingWith(fs *pflag.FlagSet, rest string) string {
	best := ""
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && strings.HasSuffix(f.Name, rest) && (best == "" || len(f.Name) < len(best)) {
			best = f.Name
		}
	})
	return best
}

// levenshtein is the edit distance between a and b: insertions, deletions and substitutions
// of characters.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
