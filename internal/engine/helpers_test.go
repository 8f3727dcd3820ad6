package engine_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/seal"
	"github.com/stretchr/testify/require"
)

// backends are the two backends over the engine, each on a prefix of its own.
func backends(t *testing.T) map[string]*engine.Engine { return backendsWith(t, backend.Options{}) }

// backendsWith are the two backends over the engine with opts, each on a prefix of its own.
func backendsWith(t *testing.T, opts backend.Options) map[string]*engine.Engine {
	c, prefix := adaptertest.Server(t)
	opts.Prefix = prefix + "l"
	l, err := list.New(c, opts)
	require.NoError(t, err)
	opts.Prefix = prefix + "z"
	z, err := zset.New(c, opts)
	require.NoError(t, err)
	return map[string]*engine.Engine{"list": engineOf(l), "zset": engineOf(z)}
}

// eachBackend runs test in a parallel subtest per backend over the engine, each on a prefix
// of its own, as an adaptertest.LaneRig.
func eachBackend(t *testing.T, test func(t *testing.T, r adaptertest.LaneRig)) {
	for _, name := range []string{"list", "zset"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, prefix := adaptertest.Server(t)
			var (
				b   backend.Backend
				e   *engine.Engine
				err error
			)
			if name == "list" {
				var l *list.Backend
				l, err = list.New(c, backend.Options{Prefix: prefix})
				b, e = l, engineOf(l)
			} else {
				var z *zset.Backend
				z, err = zset.New(c, backend.Options{Prefix: prefix})
				b, e = z, engineOf(z)
			}
			require.NoError(t, err)
			test(t, adaptertest.LaneRig{
				Env:       adaptertest.NewEnv(t, c, prefix, b),
				PublishOn: e.PublishOn,
				Meta:      func(topic string) string { return e.Keys(topic, "g").Meta() },
			})
		})
	}
}

func messages(payloads ...string) []backend.OutMessage {
	out := make([]backend.OutMessage, len(payloads))
	for i, p := range payloads {
		out[i] = backend.OutMessage{Envelope: adaptertest.Envelope(p)}
	}
	return out
}

// publish publishes payloads to topic and returns their IDs.
func publish(t *testing.T, e *engine.Engine, topic string, payloads ...string) []string {
	t.Helper()
	res, err := e.Publish(t.Context(), &backend.PublishParams{Topic: topic, Messages: messages(payloads...)})
	ids := res.IDs
	require.NoError(t, err)
	return ids
}

// ensure registers a durable group.
func ensure(t *testing.T, e *engine.Engine, topic, group string) {
	t.Helper()
	require.NoError(t, e.EnsureGroup(t.Context(), &backend.EnsureGroupParams{Topic: topic, Group: group}))
}

// claimErr claims up to n without blocking under a minute's lease.
func claimErr(t *testing.T, e *engine.Engine, topic, group, consumer string, n int) ([]backend.Delivery, error) {
	t.Helper()
	c, err := e.ClaimOnce(t.Context(), &backend.ClaimParams{Topic: topic, Group: group, Consumer: consumer, Count: n, Lease: time.Minute}, 0)
	return c.Deliveries, err
}

// claim claims up to n without blocking, and fails the test on an error.
func claim(t *testing.T, e *engine.Engine, topic, group, consumer string, n int) []backend.Delivery {
	t.Helper()
	ds, err := claimErr(t, e, topic, group, consumer, n)
	require.NoError(t, err)
	return ds
}

// claimAll claims n at a time until a claim returns nothing, and returns what it got: all
// that the group had ready.
func claimAll(t *testing.T, e *engine.Engine, topic, group, consumer string, n int) []backend.Delivery {
	t.Helper()
	var got []backend.Delivery
	for ds := claim(t, e, topic, group, consumer, n); len(ds) > 0; ds = claim(t, e, topic, group, consumer, n) {
		got = append(got, ds...)
	}
	return got
}

// groupsOf lists the groups registered on topic.
func groupsOf(t *testing.T, e *engine.Engine, topic string) []string {
	t.Helper()
	groups, err := e.GroupNames(t.Context(), topic)
	require.NoError(t, err)
	return groups
}

// stats reads a group's stats.
func stats(t *testing.T, e *engine.Engine, topic, group string) backend.Stats {
	t.Helper()
	s, err := e.Stats(t.Context(), &backend.StatsParams{Topic: topic, Group: group})
	require.NoError(t, err)
	return s
}

// tagKeys lists every key under topic's hash tag, without the tag, sorted: a SCAN of the
// prefix, so that a key no code path names is found too.
func tagKeys(t *testing.T, e *engine.Engine, topic string) []string {
	t.Helper()
	tag := e.Tag(topic)
	var out []string
	iter := e.Client().Scan(t.Context(), 0, tag+"*", 1000).Iterator()
	for iter.Next(t.Context()) {
		out = append(out, strings.TrimPrefix(iter.Val(), tag+":"))
	}
	require.NoError(t, iter.Err())
	slices.Sort(out)
	return out
}

// keysLeft is tagKeys less the tombstones an admin delete leaves (they expire).
func keysLeft(t *testing.T, e *engine.Engine, topic string) []string {
	t.Helper()
	return adaptertest.WithoutTombstones(t, t.Context(), e.Client(), e.Tag(topic), tagKeys(t, e, topic))
}

// pttl is the time left to live of a key: -1 without an expiry, -2 when it does not exist.
func pttl(t *testing.T, e *engine.Engine, key string) time.Duration {
	t.Helper()
	d, err := e.Client().PTTL(t.Context(), key).Result()
	require.NoError(t, err)
	return d
}

// idNum is a list/zset delivery ID as the number it is.
func idNum(t *testing.T, id string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(id, 10, 64)
	require.NoError(t, err, "delivery ID %q", id)
	return n
}

// requireAllAbove asserts that every ID of newer is greater than every ID of older.
func requireAllAbove(t *testing.T, newer, older []string, msg string) {
	t.Helper()
	require.NotEmpty(t, newer)
	require.NotEmpty(t, older)
	for _, n := range newer {
		for _, o := range older {
			require.Greater(t, idNum(t, n), idNum(t, o), "%s: %s after %s", msg, n, o)
		}
	}
}

// waitClockPast waits until the Redis clock in microseconds, where a topic created now starts its
// IDs, is at or above every ID of ids. A topic created again issues IDs above its earlier ones
// only as long as it issued fewer than 1,000 IDs a millisecond on average (engine.lua's
// first_seq): one deleted and created again within the millisecond it was first created in
// issues the same IDs again, which these tests would otherwise meet about every other run.
func waitClockPast(t *testing.T, e *engine.Engine, ids []string) {
	t.Helper()
	var top int64
	for _, id := range ids {
		top = max(top, idNum(t, id))
	}
	require.Eventually(t, func() bool { return e.Client().Time(t.Context()).Val().UnixMilli()*1000 >= top },
		5*time.Second, time.Millisecond)
}

// engineOf returns the engine under a list or zset backend.
func engineOf(b any) *engine.Engine {
	return seal.Open(b).(interface{ Engine() *engine.Engine }).Engine()
}
