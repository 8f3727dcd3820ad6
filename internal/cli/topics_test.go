package cli

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// fillEveryBackend writes a topic per backend, and a drained list topic (only its registry,
// counters and a dead letter are left), which must still show as the list backend's.
func fillEveryBackend(f *fixture) {
	f.group(f.list, "orders", "billing")
	f.group(f.list, "orders", "shipping")
	f.publish(f.list, "orders", 3, 0)
	f.publish(f.zset, "reminders", 1, time.Hour)
	f.publish(f.stream, "events", 2, 0)
	f.publish(f.list, "drained", 1, 0)
	f.bury(f.list, "drained", backend.DefaultGroup, "poison", f.claim(f.list, "drained", backend.DefaultGroup, 1)...)
}

func TestTopicsTableShowsEveryBackend(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillEveryBackend(f)

	code, out, _ := f.run("topics")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^BACKEND\s+TOPIC\s+GROUPS$`, out)
	require.Regexp(t, `(?m)^list\s+drained\s+default$`, out)
	require.Regexp(t, `(?m)^streams\s+events\s+default$`, out)
	require.Regexp(t, `(?m)^list\s+orders\s+billing, shipping$`, out)
	require.Regexp(t, `(?m)^zset\s+reminders\s+default$`, out)
	require.NotRegexp(t, `(?m)^zset\s+drained`, out)

	code, out, _ = f.run("topics", "--backend", "streams")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^streams\s+events\s+default$`, out)
	require.NotContains(t, out, "orders")
	require.NotContains(t, out, "drained")

	code, out, _ = f.run("topics", "--backend", "zset")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^zset\s+reminders\s+default$`, out)
	require.NotContains(t, out, "drained")
}

func TestTopicsUnderAnEmptyPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, out, _ := f.run("topics")
	require.Equal(t, 0, code)
	require.Contains(t, out, `No topics under prefix "`+f.prefix+`" in the list, zset and streams backends`)
}

func TestToolsRejectBadFlags(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topics", "--backend", "kafka"}, `--backend "kafka": want list, zset, streams or auto`},
		{[]string{"stats", "--group", "g"}, "--group needs --topic"},
		{[]string{"stats", "--interval", "0s"}, "--interval 0s: must be positive"},
		{[]string{"dead", "ls", "--topic", "t"}, "--topic and --group are required"},
		{[]string{"stats", "--topic", "a b"}, `relq: invalid topic name "a b"`},
	} {
		code, _, errOut := f.run(tc.args...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, errOut, tc.want, tc.args)
	}
	code, _, errOut := runTool(t, f.ctx, Env{Getenv: urlEnv(f.url)}, "topics", "--prefix", "a:b")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `relq: invalid prefix name "a:b"`)
}
