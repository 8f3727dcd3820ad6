package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// These fail before any connection: no Redis, no Admin.

func TestAMissingArgumentPrintsTheUsageLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"msg", "ls", "orders"}, "relq: missing GROUP\nusage: relq msg ls TOPIC GROUP [flags] (see relq msg ls --help)\n"},
		{[]string{"msg", "show"}, "relq: missing TOPIC GROUP ID\nusage: relq msg show TOPIC GROUP ID [flags] (see relq msg show --help)\n"},
		{[]string{"msg", "rm", "orders", "billing"}, "relq: missing ID\nusage: relq msg rm TOPIC GROUP ID [flags] (see relq msg rm --help)\n"},
		{[]string{"msg", "run", "a", "b", "c", "d"}, "relq: unexpected argument \"d\"\nusage: relq msg run TOPIC GROUP ID [flags] (see relq msg run --help)\n"},
		{[]string{"group", "pause", "orders"}, "relq: missing GROUP\nusage: relq group pause TOPIC GROUP [flags] (see relq group pause --help)\n"},
		{[]string{"group", "ls"}, "relq: missing TOPIC\nusage: relq group ls TOPIC [flags] (see relq group ls --help)\n"},
		{[]string{"topic", "delete"}, "relq: missing TOPIC\nusage: relq topic delete TOPIC [flags] (see relq topic delete --help)\n"},
		{[]string{"topic", "ls", "orders"}, "relq: unexpected argument \"orders\"\nusage: relq topic ls [flags] (see relq topic ls --help)\n"},
		{[]string{"dead", "show", "--topic", "t", "--group", "g"}, "relq: missing ID\nusage: relq dead show ID [flags] (see relq dead show --help)\n"},
		{[]string{"stats", "orders"}, "relq: unexpected argument \"orders\"\nusage: relq stats [flags] (see relq stats --help)\n"},
	} {
		code, out, errOut := memRun{}.run(t, tc.args...)
		require.Equal(t, 1, code, tc.args)
		require.Empty(t, out, tc.args)
		require.Equal(t, tc.want, errOut, tc.args)
	}
}

func TestAnUnknownFlagSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"msg", "ls", "a", "b", "--stat", "dead"}, "relq: unknown flag: --stat (did you mean --state?)\nusage: relq msg ls TOPIC GROUP [flags]"},
		{[]string{"msg", "ls", "a", "b", "--cursr", "x"}, "relq: unknown flag: --cursr (did you mean --cursor?)\n"},
		{[]string{"msg", "ls", "a", "b", "--cnt=3"}, "relq: unknown flag: --cnt (did you mean --count?)\n"},
		{[]string{"dead", "ls", "--limt", "3"}, "relq: unknown flag: --limt (did you mean --limit?)\nusage: relq dead ls [flags]"},
		{[]string{"stats", "--wach"}, "relq: unknown flag: --wach (did you mean --watch?)\n"},
		{[]string{"topics", "--redis-ulr", "redis://x"}, "relq: unknown flag: --redis-ulr (did you mean --redis-url?)\n"},
		{[]string{"group", "ls", "t", "--pre", "shop"}, "relq: unknown flag: --pre (did you mean --prefix?)\n"},            // the noun's flag; a prefix of it
		{[]string{"msg", "rm", "a", "b", "c", "-yes"}, "relq: unknown shorthand flag: 'e' in -es (did you mean --yes?)\n"}, // one dash
		{[]string{"msg", "ls", "a", "b", "-count", "3"}, "relq: unknown shorthand flag: 'c' in -count (did you mean --count?)\n"},
		{[]string{"group", "ls", "t", "--zzzzzz"}, "relq: unknown flag: --zzzzzz\nusage: relq group ls TOPIC [flags] (see relq group ls --help)\n"},
	} {
		code, _, errOut := memRun{}.run(t, tc.args...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, errOut, tc.want, tc.args)
	}
}

func TestAnUnknownVerbSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	code, _, errOut := memRun{}.run(t, "group", "lss")
	require.Equal(t, 1, code)
	require.Equal(t, "relq: unknown command \"lss\" for \"relq group\" (did you mean ls?)\nusage: relq group COMMAND [flags] (see relq group --help)\n", errOut)

	code, _, errOut = memRun{}.run(t, "msg", "shwo")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `(did you mean show?)`)

	code, _, errOut = memRun{}.run(t, "grup")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: unknown command \"grup\" for \"relq\"")
	require.Contains(t, errOut, "group")

	code, out, _ := memRun{}.run(t, "msg") // alone: its help
	require.Equal(t, 0, code)
	require.Contains(t, out, "relq msg ls   TOPIC GROUP [--state ready|delayed|pending|dead]")
}

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"limit", "limit", 0}, {"limt", "limit", 1}, {"stat", "state", 1},
		{"wach", "watch", 1}, {"kitten", "sitting", 3}, {"élan", "elan", 1},
	} {
		require.Equal(t, tc.want, levenshtein(tc.a, tc.b), tc)
		require.Equal(t, tc.want, levenshtein(tc.b, tc.a), tc)
	}
	require.Equal(t, "", nearestFlag(newMsgLsCommand(Env{}, &connOptions{}).Flags(), strings.Repeat("x", 8)))
}
