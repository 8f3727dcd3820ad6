package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

// fixture is one test's relq data on the shared server, under a prefix of its own, written
// through the real backends, and a way to run the tool commands on it.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	url    string
	c      redis.UniversalClient
	prefix string
	list   backend.Backend
	zset   backend.Backend
	stream backend.Backend
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := redistest.Shared(t)
	return newFixtureOn(t, srv.URL(), srv.Client(t))
}

func newFixtureOn(t *testing.T, url string, c redis.UniversalClient) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), url: url, c: c, prefix: redistest.Prefix(t)}
	var err error
	f.list, err = list.New(c, list.Options{Prefix: f.prefix})
	require.NoError(t, err)
	f.zset, err = zset.New(c, zset.Options{Prefix: f.prefix})
	require.NoError(t, err)
	f.stream, err = streams.New(c, streams.Options{Prefix: f.prefix})
	require.NoError(t, err)
	return f
}

// group registers group on topic.
func (f *fixture) group(b backend.Backend, topic, group string) {
	f.t.Helper()
	require.NoError(f.t, b.EnsureGroup(f.ctx, &backend.EnsureGroupParams{Topic: topic, Group: group}))
}

// someGroup registers group default on topic unless it has a group: these tests were written
// when a publish to a topic without groups registered default, and a publish now goes to
// the topic's backlog instead (pubsub/lifecycle.go).
func (f *fixture) someGroup(b backend.Backend, topic string) {
	f.t.Helper()
	groups, err := b.GroupNames(f.ctx, topic)
	require.NoError(f.t, err)
	if len(groups) == 0 {
		f.group(b, topic, backend.DefaultGroup)
	}
}

// publish publishes n messages with payload "msg-<i>" (due after delay) and returns their IDs.
func (f *fixture) publish(b backend.Backend, topic string, n int, delay time.Duration) []string {
	f.t.Helper()
	f.someGroup(b, topic)
	msgs := make([]backend.OutMessage, n)
	for i := range msgs {
		msgs[i] = backend.OutMessage{Delay: delay, Envelope: backend.Envelope{
			UUID: "uuid-" + string(rune('a'+i)), Metadata: map[string]string{"n": string(rune('a' + i))},
			Payload: []byte("msg-" + string(rune('a'+i)))}}
	}
	idsRes, err := b.Publish(f.ctx, &backend.PublishParams{Topic: topic, Messages: msgs})
	ids := idsRes.IDs
	require.NoError(f.t, err)
	return ids
}

// publishOne publishes one message.
func (f *fixture) publishOne(b backend.Backend, topic string, env backend.Envelope) string {
	f.t.Helper()
	f.someGroup(b, topic)
	idsRes, err := b.Publish(f.ctx, &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{{Envelope: env}}})
	ids := idsRes.IDs
	require.NoError(f.t, err)
	return ids[0]
}

// claim claims n messages of group.
func (f *fixture) claim(b backend.Backend, topic, group string, n int) []backend.Delivery {
	f.t.Helper()
	ds, err := b.Claim(f.ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: "c1", Count: n, Lease: time.Minute})
	require.NoError(f.t, err)
	require.Len(f.t, ds, n)
	return ds
}

// ack acks deliveries.
func (f *fixture) ack(b backend.Backend, topic, group string, ds ...backend.Delivery) {
	f.t.Helper()
	items := make([]backend.Held, len(ds))
	for i, d := range ds {
		items[i] = backend.Held{ID: d.ID, Attempt: d.Attempt}
	}
	_, err := b.Ack(f.ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "c1", Items: items})
	require.NoError(f.t, err)
}

// bury dead-letters claimed deliveries with reason.
func (f *fixture) bury(b backend.Backend, topic, group, reason string, ds ...backend.Delivery) {
	f.t.Helper()
	items := make([]backend.NackItem, len(ds))
	for i, d := range ds {
		items[i] = backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: reason}
	}
	res, err := b.Nack(f.ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "c1", Items: items})
	require.NoError(f.t, err)
	require.Equal(f.t, len(ds), res.DeadLettered)
}

// stats reads a group's stats through b.
func (f *fixture) stats(b backend.Backend, topic, group string) backend.Stats {
	f.t.Helper()
	st, err := b.Stats(f.ctx, &backend.StatsParams{Topic: topic, Group: group})
	require.NoError(f.t, err)
	return st
}

// run runs relq with args and --prefix, REDIS_URL set to the fixture's server. Its standard
// input is empty and no terminal.
func (f *fixture) run(args ...string) (code int, out, errOut string) {
	f.t.Helper()
	return runTool(f.t, context.Background(), Env{Getenv: urlEnv(f.url), In: strings.NewReader("")},
		append(args, "--prefix", f.prefix)...)
}

// runIn is run with input typed on a terminal (the answer to a confirmation).
func (f *fixture) runIn(input string, args ...string) (code int, out, errOut string) {
	f.t.Helper()
	return runTool(f.t, context.Background(), Env{Getenv: urlEnv(f.url), In: strings.NewReader(input), InIsTerminal: onTerminal},
		append(args, "--prefix", f.prefix)...)
}

// wide is an Env.Width under which no table of these tests is cut.
func wide(io.Writer) int { return 300 }

// onTerminal is an Env.InIsTerminal for input typed on a terminal.
func onTerminal(io.Reader) bool { return true }

// urlEnv is a Getenv whose REDIS_URL is url.
func urlEnv(url string) func(string) string {
	return func(k string) string {
		if k == "REDIS_URL" {
			return url
		}
		return ""
	}
}

// runTool runs relq in-process and returns its exit code, stdout and stderr.
func runTool(t *testing.T, ctx context.Context, env Env, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if env.Out == nil {
		env.Out = &out
	}
	env.Err = &errOut
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.In == nil {
		env.In = strings.NewReader("")
	}
	if env.Width == nil {
		env.Width = wide // tables whole: what they hold is under test here, the cut in format_test.go
	}
	code := Main(ctx, args, env)
	t.Logf("relq %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// frames is an output that counts the frames of stats --watch (each starts with marker) and
// cancels the command's context once it has seen want of them.
type frames struct {
	marker string
	want   int
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (w *frames) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	if strings.Count(w.buf.String(), w.marker) >= w.want {
		w.cancel()
	}
	return n, err
}

var _ io.Writer = (*frames)(nil)
