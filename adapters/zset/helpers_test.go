package zset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/keys"
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

func newEnv(t *testing.T) *env {
	t.Helper()
	c := redistest.Shared(t).Client(t)
	prefix := redistest.Prefix(t)
	b, err := New(c, Options{Prefix: prefix})
	require.NoError(t, err)
	return &env{t: t, ctx: context.Background(), c: c, b: b, prefix: prefix}
}

// keys lists the keys of topic, without the tag: "seq", "g:default:ready", ...
func (e *env) keys(topic string) []string {
	e.t.Helper()
	tag := keys.Tag(e.prefix, topic) + ":"
	var out []string
	iter := e.c.Scan(e.ctx, 0, tag+"*", 1000).Iterator()
	for iter.Next(e.ctx) {
		out = append(out, strings.TrimPrefix(iter.Val(), tag))
	}
	require.NoError(e.t, iter.Err())
	slices.Sort(out)
	return out
}

func (e *env) gk(topic, group string) groupKeys { return e.b.groupKeys(topic, group) }

// zrange returns a ZSET's members in order with their scores.
func (e *env) zrange(key string) []redis.Z {
	e.t.Helper()
	v, err := e.c.ZRangeWithScores(e.ctx, key, 0, -1).Result()
	require.NoError(e.t, err)
	return v
}

func (e *env) lrange(key string) []string {
	e.t.Helper()
	v, err := e.c.LRange(e.ctx, key, 0, -1).Result()
	require.NoError(e.t, err)
	return v
}

func (e *env) zmembers(key string) []string {
	e.t.Helper()
	v, err := e.c.ZRange(e.ctx, key, 0, -1).Result()
	require.NoError(e.t, err)
	return v
}

func (e *env) zscore(key, member string) float64 {
	e.t.Helper()
	v, err := e.c.ZScore(e.ctx, key, member).Result()
	require.NoError(e.t, err)
	return v
}

func (e *env) hash(key string) map[string]string {
	e.t.Helper()
	v, err := e.c.HGetAll(e.ctx, key).Result()
	require.NoError(e.t, err)
	return v
}

func (e *env) exists(key string) bool {
	e.t.Helper()
	n, err := e.c.Exists(e.ctx, key).Result()
	require.NoError(e.t, err)
	return n == 1
}

// redisNow is the Redis clock in ms, as the scripts read it.
func (e *env) redisNow() float64 {
	e.t.Helper()
	now, err := e.c.Time(e.ctx).Result()
	require.NoError(e.t, err)
	return float64(now.UnixMilli())
}

func envelope(payload string) pubsub.Envelope {
	return pubsub.Envelope{UUID: "uuid-" + payload, Metadata: map[string]string{"k": payload}, Payload: []byte(payload)}
}

func (e *env) publish(topic string, payloads ...string) []string {
	e.t.Helper()
	return e.publishWith(topic, 0, 0, payloads...)
}

func (e *env) publishDelayed(topic string, delay time.Duration, payloads ...string) []string {
	e.t.Helper()
	return e.publishWith(topic, delay, 0, payloads...)
}

func (e *env) publishWith(topic string, delay time.Duration, priority int, payloads ...string) []string {
	e.t.Helper()
	msgs := make([]pubsub.OutMessage, len(payloads))
	for i, p := range payloads {
		msgs[i] = pubsub.OutMessage{Envelope: envelope(p), Delay: delay, Priority: priority}
	}
	ids, err := e.b.Publish(e.ctx, &pubsub.PublishParams{Topic: topic, Messages: msgs})
	require.NoError(e.t, err)
	require.Len(e.t, ids, len(payloads))
	return ids
}

func (e *env) ensureGroup(topic, group string) {
	e.t.Helper()
	require.NoError(e.t, e.b.EnsureGroup(e.ctx, &pubsub.EnsureGroupParams{Topic: topic, Group: group}))
}

func (e *env) claim(topic, group, consumer string, n int) []pubsub.Delivery {
	e.t.Helper()
	ds, err := e.b.Claim(e.ctx, &pubsub.ClaimParams{Topic: topic, Group: group, Consumer: consumer, Count: n, Lease: time.Minute})
	require.NoError(e.t, err)
	return ds
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

func (e *env) reclaim(topic, group string, max int) pubsub.ReclaimResult {
	e.t.Helper()
	res, err := e.b.Reclaim(e.ctx, &pubsub.ReclaimParams{Topic: topic, Group: group, MaxDeliveries: max})
	require.NoError(e.t, err)
	return res
}

// expire moves the lease deadline of id into the past, as if the lease had run out.
func (e *env) expire(topic, group, id string) {
	e.t.Helper()
	key := e.gk(topic, group).leases
	require.NoError(e.t, e.c.ZAddXX(e.ctx, key, redis.Z{Score: 1, Member: id}).Err())
	require.Equal(e.t, 1.0, e.zscore(key, id), "no lease to expire")
}

func (e *env) stats(topic, group string) pubsub.Stats {
	e.t.Helper()
	s, err := e.b.Stats(e.ctx, &pubsub.StatsParams{Topic: topic, Group: group})
	require.NoError(e.t, err)
	return s
}

// mem is the ready member of a delivery ID of priority 0.
func mem(id string) string { return memp(id, 0) }

// memp is the ready member of a delivery ID of priority p (in range).
func memp(id string, p int) string {
	return fmt.Sprintf("%07d:%016s", PriorityMax-p, id)
}

func mems(ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = mem(id)
	}
	return out
}

// members returns the members of a ZRANGE WITHSCORES reply.
func members(zs []redis.Z) []string {
	out := make([]string, len(zs))
	for i, z := range zs {
		out[i], _ = z.Member.(string)
	}
	return out
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

func zmember(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
