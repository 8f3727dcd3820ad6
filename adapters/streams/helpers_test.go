package streams

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// env is one test's backend on the shared server, under a key prefix of its own.
type env struct {
	t      *testing.T
	ctx    context.Context
	c      *redis.Client
	b      *Backend
	prefix string
}

func newEnv(t *testing.T, opts ...func(*Options)) *env {
	t.Helper()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	o := Options{Prefix: prefix}
	for _, f := range opts {
		f(&o)
	}
	b, err := New(c, o)
	require.NoError(t, err)
	return &env{t: t, ctx: context.Background(), c: c, b: b, prefix: prefix}
}

func watermillFormat(o *Options) { o.Format = FormatWatermill }
func deleteOnAck(o *Options)     { o.Retention = DeleteOnAck }

func (e *env) tk(topic string) topicKeys        { return e.b.topicKeys(topic) }
func (e *env) gk(topic, group string) groupKeys { return e.b.groupKeys(topic, group) }

// keys lists the keys relq keeps for topic (the stream included), without the tag: "stream",
// "published", "g:default:counters", ...
func (e *env) keys(topic string) []string {
	e.t.Helper()
	tag := e.tk(topic).base + ":"
	var out []string
	iter := e.c.Scan(e.ctx, 0, tag+"*", 1000).Iterator()
	for iter.Next(e.ctx) {
		out = append(out, strings.TrimPrefix(iter.Val(), tag))
	}
	require.NoError(e.t, iter.Err())
	slices.Sort(out)
	return out
}

// pel is one entry of a group's PEL.
type pel struct {
	Consumer string
	Count    int64
}

// pel returns the group's PEL: id -> holder and delivery count.
func (e *env) pel(topic, group string) map[string]pel {
	e.t.Helper()
	ps, err := e.c.XPendingExt(e.ctx, &redis.XPendingExtArgs{
		Stream: e.tk(topic).stream, Group: group, Start: "-", End: "+", Count: 10000,
	}).Result()
	require.NoError(e.t, err)
	out := map[string]pel{}
	for _, p := range ps {
		out[p.ID] = pel{Consumer: p.Consumer, Count: p.RetryCount}
	}
	return out
}

// idle returns the PEL idle time of id.
func (e *env) idle(topic, group, id string) time.Duration {
	e.t.Helper()
	ps, err := e.c.XPendingExt(e.ctx, &redis.XPendingExtArgs{
		Stream: e.tk(topic).stream, Group: group, Start: id, End: id, Count: 1,
	}).Result()
	require.NoError(e.t, err)
	require.Len(e.t, ps, 1, "%s is not pending", id)
	return ps[0].Idle
}

// retry returns the group's retry ZSET as entry id -> due ms.
func (e *env) retry(topic, group string) map[string]float64 {
	e.t.Helper()
	zs, err := e.c.ZRangeWithScores(e.ctx, e.gk(topic, group).retry, 0, -1).Result()
	require.NoError(e.t, err)
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

func (e *env) xlen(key string) int64 {
	e.t.Helper()
	n, err := e.c.XLen(e.ctx, key).Result()
	require.NoError(e.t, err)
	return n
}

func (e *env) hash(key string) map[string]string {
	e.t.Helper()
	v, err := e.c.HGetAll(e.ctx, key).Result()
	require.NoError(e.t, err)
	return v
}

func (e *env) redisNow() time.Time {
	e.t.Helper()
	now, err := e.c.Time(e.ctx).Result()
	require.NoError(e.t, err)
	return now
}

func envelope(payload string) pubsub.Envelope {
	return pubsub.Envelope{UUID: "uuid-" + payload, Metadata: map[string]string{"k": payload}, Payload: []byte(payload)}
}

func (e *env) publish(topic string, payloads ...string) []string {
	e.t.Helper()
	return e.publishDelayed(topic, 0, payloads...)
}

func (e *env) publishDelayed(topic string, delay time.Duration, payloads ...string) []string {
	e.t.Helper()
	msgs := make([]pubsub.OutMessage, len(payloads))
	for i, p := range payloads {
		msgs[i] = pubsub.OutMessage{Envelope: envelope(p), Delay: delay}
	}
	ids, err := e.b.Publish(e.ctx, &pubsub.PublishParams{Topic: topic, Messages: msgs})
	require.NoError(e.t, err)
	require.Len(e.t, ids, len(payloads))
	return ids
}

func (e *env) ensureGroup(topic, group string, fromOldest bool) {
	e.t.Helper()
	require.NoError(e.t, e.b.EnsureGroup(e.ctx, &pubsub.EnsureGroupParams{Topic: topic, Group: group, FromOldest: fromOldest}))
}

func (e *env) claimLease(topic, group, consumer string, n int, lease time.Duration) []pubsub.Delivery {
	e.t.Helper()
	ds, err := e.b.Claim(e.ctx, &pubsub.ClaimParams{Topic: topic, Group: group, Consumer: consumer, Count: n, Lease: lease})
	require.NoError(e.t, err)
	for _, d := range ds {
		require.NoError(e.t, d.Err)
	}
	return ds
}

func (e *env) claim(topic, group, consumer string, n int) []pubsub.Delivery {
	e.t.Helper()
	return e.claimLease(topic, group, consumer, n, time.Minute)
}

func (e *env) ack(topic, group, consumer string, ds ...pubsub.Delivery) pubsub.AckResult {
	e.t.Helper()
	res, err := e.b.Ack(e.ctx, &pubsub.AckParams{Topic: topic, Group: group, Consumer: consumer, Items: held(ds...)})
	require.NoError(e.t, err)
	return res
}

func (e *env) nack(topic, group, consumer string, max int, items ...pubsub.NackItem) pubsub.NackResult {
	e.t.Helper()
	res, err := e.b.Nack(e.ctx, &pubsub.NackParams{Topic: topic, Group: group, Consumer: consumer, Items: items, MaxDeliveries: max})
	require.NoError(e.t, err)
	return res
}

func (e *env) extend(topic, group, consumer string, ds ...pubsub.Delivery) []string {
	e.t.Helper()
	lost, err := e.b.Extend(e.ctx, &pubsub.ExtendParams{Topic: topic, Group: group, Consumer: consumer, Items: held(ds...), Lease: time.Minute})
	require.NoError(e.t, err)
	return lost
}

func (e *env) reclaim(topic, group string, max int, orphanLease time.Duration) pubsub.ReclaimResult {
	e.t.Helper()
	res, err := e.b.Reclaim(e.ctx, &pubsub.ReclaimParams{Topic: topic, Group: group, MaxDeliveries: max, OrphanLease: orphanLease})
	require.NoError(e.t, err)
	return res
}

func (e *env) stats(topic, group string) pubsub.Stats {
	e.t.Helper()
	s, err := e.b.Stats(e.ctx, &pubsub.StatsParams{Topic: topic, Group: group})
	require.NoError(e.t, err)
	return s
}

// counts is the state part of Stats.
type counts struct{ Ready, Delayed, Pending, Dead int64 }

func (e *env) counts(topic, group string) counts {
	e.t.Helper()
	s := e.stats(topic, group)
	return counts{s.Ready, s.Delayed, s.Pending, s.Dead}
}

func held(ds ...pubsub.Delivery) []pubsub.Held {
	out := make([]pubsub.Held, len(ds))
	for i, d := range ds {
		out[i] = pubsub.Held{ID: d.ID, Attempt: d.Attempt}
	}
	return out
}

func ids(ds []pubsub.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func payloads(ds []pubsub.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Envelope.Payload)
	}
	return out
}
