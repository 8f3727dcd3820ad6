package cli

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/keys"
)

// fillOrders leaves orders/billing (list) with 2 ready, 1 delayed, 1 pending and 1 dead
// letter, having published 6, claimed 3 and acked 1; orders/audit and zset's reminders get
// one ready message each.
func fillOrders(f *fixture) {
	f.group(f.list, "orders", "billing")
	f.group(f.list, "orders", "audit")
	f.publish(f.list, "orders", 5, 0)
	ds := f.claim(f.list, "orders", "billing", 3)
	f.ack(f.list, "orders", "billing", ds[0])
	f.bury(f.list, "orders", "billing", "handler: card declined", ds[1])
	f.publish(f.list, "orders", 1, time.Hour)
	f.publish(f.zset, "reminders", 1, 0)
}

func TestStatsPrintsEveryGroupsNumbers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillOrders(f)

	code, out, _ := f.run("stats")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^BACKEND\s+TOPIC\s+GROUP\s+READY\s+DELAYED\s+PENDING\s+DEAD\s+OLDEST PENDING\s+OLDEST READY$`, out)
	//                                          ready delayed pending dead  pending age   ready age
	require.Regexp(t, `(?m)^list\s+orders\s+billing\s+2\s+1\s+1\s+1\s+\d[\d.]*m?s\s+\d[\d.]*m?s$`, out)
	require.Regexp(t, `(?m)^list\s+orders\s+audit\s+5\s+1\s+0\s+0\s+-\s+\d[\d.]*m?s$`, out)
	require.Regexp(t, `(?m)^zset\s+reminders\s+default\s+1\s+0\s+0\s+0\s+-\s+\d[\d.]*m?s$`, out)
	require.Regexp(t, `(?m)^BACKEND\s+TOPIC\s+GROUP\s+PUBLISHED\s+CLAIMED\s+ACKED\s+NACKED\s+RECLAIMED\s+DEAD-LETTERED\s+STALE ACKS\s+STALE NACKS\s+REREGISTERED$`, out)
	//                                         published claimed acked nacked reclaimed dead-lettered stale  reregistered
	require.Regexp(t, `(?m)^list\s+orders\s+billing\s+6\s+3\s+1\s+\d+\s+0\s+1\s+0\s+0\s+0$`, out)
	require.Regexp(t, `(?m)^list\s+orders\s+audit\s+6\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0$`, out)
	require.NotContains(t, out, "WARNING", "no group was registered again")

	// One topic, one group.
	code, out, _ = f.run("stats", "--topic", "orders", "--group", "audit")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^list\s+orders\s+audit\s+5\s+1\s+0\s+0\s`, out)
	require.NotContains(t, out, "billing")
	require.NotContains(t, out, "reminders")
}

func TestStatsNamesWhatExistsForAnUnknownTopicOrGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillOrders(f)

	code, _, errOut := f.run("stats", "--topic", "ordres")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `relq: topic "ordres" not found under prefix "`+f.prefix+`" in the list, zset and streams backends; `+
		`topics: orders (list), reminders (zset)`)

	code, _, errOut = f.run("stats", "--topic", "orders", "--group", "biling")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `relq: group "biling" not found on topic "orders" (list); its groups: audit, billing`)

	code, _, errOut = f.run("stats", "--topic", "orders", "--backend", "zset")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `topic "orders" not found under prefix "`+f.prefix+`" in the zset backend; topics: reminders (zset)`)

	empty := newFixture(t)
	code, _, errOut = empty.run("dead", "ls", "--topic", "orders", "--group", "billing")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `there are no topics under prefix "`+empty.prefix+`" in the list, zset and streams backends at all (is --prefix right?)`)
}

// Not a terminal: one table after another, each after a line with the time, until the
// context ends (Ctrl-C), which is a normal exit.
func TestStatsWatchPrintsFramesUntilCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillOrders(f)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &frames{marker: "\n=== ", want: 3, cancel: cancel}
	io.WriteString(&w.buf, "\n") // so that the first frame's line counts too
	code, _, _ := runTool(t, ctx, Env{Getenv: urlEnv(f.url), Out: w},
		"stats", "--watch", "--interval", "20ms", "--topic", "orders", "--prefix", f.prefix)
	require.Equal(t, 0, code)
	out := w.buf.String()
	require.GreaterOrEqual(t, strings.Count(out, "\n=== "), 3)
	require.Regexp(t, `(?m)^=== \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+\nBACKEND\s+TOPIC`, out)
	rows := regexp.MustCompile(`(?m)^list\s+orders\s+billing\s`).FindAllString(out, -1)
	require.GreaterOrEqual(t, len(rows), 6, "two tables a frame")
	require.NotContains(t, out, clearScreen)
}

// On a terminal each frame clears the screen and starts with a title line.
func TestStatsWatchRedrawsATerminal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillOrders(f)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &frames{marker: clearScreen, want: 2, cancel: cancel}
	env := Env{Getenv: urlEnv(f.url), Out: w, IsTerminal: func(io.Writer) bool { return true }}
	code, _, _ := runTool(t, ctx, env, "stats", "-w", "--interval", "20ms", "--prefix", f.prefix)
	require.Equal(t, 0, code)
	out := w.buf.String()
	require.GreaterOrEqual(t, strings.Count(out, clearScreen), 2)
	require.Contains(t, out, clearScreen+`relq stats: prefix "`+f.prefix+`" at redis://`)
	require.Contains(t, out, "every 20ms (Ctrl-C to stop)")
	require.NotContains(t, out, "\n=== ")
}

// An unknown topic ends a watch at once rather than printing the error forever.
func TestStatsWatchStopsOnAnErrorInTheFirstFrame(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, _, errOut := f.run("stats", "--watch", "--topic", "nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `topic "nope" not found`)
}

// Another program's consumer group on a streams topic, under a name relq does not accept, is
// left out of the table instead of failing it.
func TestStatsSkipsForeignGroups(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.publish(f.stream, "events", 1, 0)
	stream := keys.Join(keys.Tag(f.prefix, "events"), "stream")
	require.NoError(t, f.c.XGroupCreate(context.Background(), stream, "other app", "0").Err())

	code, out, errOut := f.run("stats")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^streams\s+events\s+default\s+1\s`, out)
	require.NotContains(t, out, "other app")
}
