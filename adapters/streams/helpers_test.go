package streams

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// env is one test's backend on the shared server, under a key prefix of its own. Its Claim
// fails the test on a delivery that does not decode; tests of corrupt entries call e.b.Claim.
type env struct {
	*adaptertest.Env
	b *Backend
}

// newEnv returns the env of a backend under a prefix of its own, with opts applied.
func newEnv(t *testing.T, opts ...func(*Options)) *env {
	t.Helper()
	c, prefix := adaptertest.Server(t)
	o := Options{Prefix: prefix}
	for _, f := range opts {
		f(&o)
	}
	b, err := New(c, o)
	require.NoError(t, err)
	e := &env{Env: adaptertest.NewEnv(t, c, prefix, b), b: b}
	// Keys lists the keys relq keeps for a topic (the stream included), without the tag:
	// "stream", "published", "g:default:counters", ...
	e.Tag = func(topic string) string { return e.tk(topic).base }
	e.RequireDecoded = true
	return e
}

// eachFormat runs test in a parallel subtest per Format, each on an env of its own made with
// opts: the formats store entries differently, and each must keep every promise.
func eachFormat(t *testing.T, test func(t *testing.T, e *env), opts ...func(*Options)) {
	for _, format := range []Format{FormatNative, FormatWatermill} {
		t.Run(string(format), func(t *testing.T) {
			t.Parallel()
			test(t, newEnv(t, append([]func(*Options){func(o *Options) { o.Format = format }}, opts...)...))
		})
	}
}

// topicInfo reads the topic's TopicInfo through the Admin API.
func (e *env) topicInfo(topic string) backend.TopicInfo {
	e.T.Helper()
	info, err := e.b.Topic(e.Ctx, topic)
	require.NoError(e.T, err)
	return info
}

func watermillFormat(o *Options) { o.Format = FormatWatermill }
func deleteOnAck(o *Options)     { o.Retention = DeleteOnAck }

func (e *env) tk(topic string) topicKeys        { return e.b.topicKeys(topic) }
func (e *env) gk(topic, group string) groupKeys { return e.b.groupKeys(topic, group) }

// overdue makes consumer due in the group's holders index, as if the earliest lease it may
// hold had run out: for tests that age PEL entries with XCLAIM ... IDLE, which the index,
// kept by the clock, cannot see.
func (e *env) overdue(topic, group, consumer string) {
	e.T.Helper()
	require.NoError(e.T, e.C.ZAdd(e.Ctx, e.gk(topic, group).holders, redis.Z{Score: 0, Member: consumer}).Err())
}

// walks returns where Reclaim's walk of each holder goes on (reclaim_from), without the walk
// of the group's whole PEL (the parking consumer's field).
func (e *env) walks(topic, group string) map[string]string {
	e.T.Helper()
	h := e.Hash(e.gk(topic, group).reclaimFrom)
	delete(h, ParkedConsumer)
	return h
}

// pel is one entry of a group's PEL.
type pel struct {
	Consumer string
	Count    int64
}

// pel returns the group's PEL: id -> holder and delivery count.
func (e *env) pel(topic, group string) map[string]pel {
	e.T.Helper()
	ps, err := e.C.XPendingExt(e.Ctx, &redis.XPendingExtArgs{
		Stream: e.tk(topic).stream, Group: group, Start: "-", End: "+", Count: 10000,
	}).Result()
	require.NoError(e.T, err)
	out := map[string]pel{}
	for _, p := range ps {
		out[p.ID] = pel{Consumer: p.Consumer, Count: p.RetryCount}
	}
	return out
}

// idle returns the PEL idle time of id.
func (e *env) idle(topic, group, id string) time.Duration {
	e.T.Helper()
	ps, err := e.C.XPendingExt(e.Ctx, &redis.XPendingExtArgs{
		Stream: e.tk(topic).stream, Group: group, Start: id, End: id, Count: 1,
	}).Result()
	require.NoError(e.T, err)
	require.Len(e.T, ps, 1, "%s is not pending", id)
	return ps[0].Idle
}

// retry returns the group's retry ZSET as entry id -> due ms.
func (e *env) retry(topic, group string) map[string]float64 {
	e.T.Helper()
	zs, err := e.C.ZRangeWithScores(e.Ctx, e.gk(topic, group).retry, 0, -1).Result()
	require.NoError(e.T, err)
	out := map[string]float64{}
	for _, z := range zs {
		out[unpadID(z.Member.(string))] = z.Score
	}
	return out
}

// unpadID undoes lib.lua's pad: "00..017-00..03" -> "17-3".
func unpadID(m string) string {
	ms, seq, _ := strings.Cut(m, "-")
	strip := func(s string) string {
		s = strings.TrimLeft(s, "0")
		if s == "" {
			return "0"
		}
		return s
	}
	return strip(ms) + "-" + strip(seq)
}

// groupsOf lists the groups of topic's stream.
func groupsOf(t *testing.T, e *env, topic string) []string {
	t.Helper()
	groups, err := e.b.GroupNames(e.Ctx, topic)
	require.NoError(t, err)
	return groups
}

func (e *env) xlen(key string) int64 {
	e.T.Helper()
	n, err := e.C.XLen(e.Ctx, key).Result()
	require.NoError(e.T, err)
	return n
}

func (e *env) redisNow() time.Time {
	e.T.Helper()
	now, err := e.C.Time(e.Ctx).Result()
	require.NoError(e.T, err)
	return now
}

// counts is the state part of Stats.
type counts struct{ Ready, Delayed, Pending, Dead int64 }

func (e *env) counts(topic, group string) counts {
	e.T.Helper()
	s := e.Stats(topic, group)
	return counts{s.Ready, s.Delayed, s.Pending, s.Dead}
}

// withoutExpiry is res with NextExpiry zeroed, to compare its counts alone.
func withoutExpiry(res backend.ReclaimResult) backend.ReclaimResult {
	res.NextExpiry = 0
	return res
}

// requireExpiryNear checks that res reports the next lease expiry at most lease away, and not
// earlier than the few seconds a test's leases may have been idle.
func requireExpiryNear(t *testing.T, lease time.Duration, res backend.ReclaimResult, msg string) {
	t.Helper()
	require.LessOrEqual(t, res.NextExpiry, lease, msg)
	require.Greater(t, res.NextExpiry, lease-10*time.Second, msg)
}

// requireDueWithin checks that a due time in ms (a retry's score) is delay after some moment
// between before and after, read from the Redis clock around the call that set it.
func requireDueWithin(t *testing.T, due float64, before, after time.Time, delay time.Duration) {
	t.Helper()
	require.GreaterOrEqual(t, due, float64(before.Add(delay).UnixMilli()), "due before delay had passed")
	require.LessOrEqual(t, due, float64(after.Add(delay).UnixMilli()), "due later than delay after the call")
}
