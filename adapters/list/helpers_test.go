package list

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/keys"
	"github.com/stretchr/testify/require"
)

// env is one test's backend on the shared server, under a key prefix of its own.
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
	return &env{Env: adaptertest.NewEnv(t, c, prefix, b), b: b}
}

// topicKeys are the keys of a topic that every group shares (doc.go's layout).
type topicKeys struct {
	meta, bodies, refs, registry string
}

// groupKeys are the keys of one group of one topic, by their names in doc.go's layout: the
// store's, then internal/engine's.
type groupKeys struct {
	ready, delayed, processing                                     string
	pending, pendingAt, holders, retries, dead, deadInfo, counters string
	topic                                                          topicKeys
}

// gk returns the keys of group on topic. Keys the engine gives accessors for come from it;
// the rest are built by name, and checked against the accessors' naming.
func (e *env) gk(topic, group string) groupKeys {
	e.T.Helper()
	k := e.b.keys(topic, group)
	tag := keys.Tag(e.Prefix, topic)
	g := func(name string) string { return keys.Join(tag, "g", group, name) }
	require.Equal(e.T, g("pending"), k.Pending(), "the group's keys are T:g:<group>:<name>")
	return groupKeys{
		ready:      k.Store("ready"),
		delayed:    k.Store("delayed"),
		processing: k.Store("processing"),
		pending:    k.Pending(),
		pendingAt:  g("pending_at"),
		holders:    k.Holders(),
		retries:    k.Retries(),
		dead:       k.Dead(),
		deadInfo:   g("dead_info"),
		counters:   g("counters"),
		topic: topicKeys{
			meta:     k.Meta(),
			bodies:   k.Bodies(),
			refs:     k.Refs(),
			registry: keys.Join(tag, "registry"),
		},
	}
}

// expire moves the lease deadline of id into the past, as if the lease had run out.
func (e *env) expire(topic, group, id string) { e.ExpireLease(e.gk(topic, group).pending, id) }

func zmember(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// readyIDs returns the ids of the ready entries ("id@ms"), left to right.
func (e *env) readyIDs(ready string) []string {
	var ids []string
	for _, entry := range e.LRange(ready) {
		id, _, _ := strings.Cut(entry, "@")
		ids = append(ids, id)
	}
	return ids
}

// readySince returns id -> ready-since (ms) of the ready entries.
func (e *env) readySince(ready string) map[string]int64 {
	out := map[string]int64{}
	for _, entry := range e.LRange(ready) {
		id, ms, ok := strings.Cut(entry, "@")
		require.True(e.T, ok, "ready entry %q carries its ready-since time", entry)
		n, err := strconv.ParseInt(ms, 10, 64)
		require.NoError(e.T, err)
		out[id] = n
	}
	return out
}

// holder is a parsed holders record, "consumer:attempt:since:extra".
type holder struct {
	consumer string
	attempt  int
	since    int64
	extra    string
}

// records returns the group's holders records, parsed; the test fails on a malformed one.
func (e *env) records(k groupKeys) map[string]holder {
	out := map[string]holder{}
	for id, v := range e.Hash(k.holders) {
		parts := strings.SplitN(v, ":", 4)
		require.Len(e.T, parts, 4, "holder %q is consumer:attempt:since:extra", v)
		attempt, err := strconv.Atoi(parts[1])
		require.NoError(e.T, err, "holder %q", v)
		since, err := strconv.ParseInt(parts[2], 10, 64)
		require.NoError(e.T, err, "holder %q", v)
		out[id] = holder{consumer: parts[0], attempt: attempt, since: since, extra: parts[3]}
	}
	return out
}

// holders returns id -> consumer of the group's holders ("" for an orphan lease, held by
// nobody).
func (e *env) holders(k groupKeys) map[string]string {
	out := map[string]string{}
	for id, r := range e.records(k) {
		out[id] = r.consumer
	}
	return out
}

// attempts returns id -> attempt of the deliveries in flight, from their holders records.
func (e *env) attempts(k groupKeys) map[string]int {
	out := map[string]int{}
	for id, r := range e.records(k) {
		out[id] = r.attempt
	}
	return out
}

// pendingSince returns the pending-since time (ms) of id: its pending_at score, which the
// since of its holders record must match.
func (e *env) pendingSince(k groupKeys, id string) int64 {
	e.T.Helper()
	r, ok := e.records(k)[id]
	require.True(e.T, ok, "%s has a holder", id)
	since := int64(e.ZScore(k.pendingAt, id))
	require.Equal(e.T, since, r.since, "pending_at and the holders record agree on %s", id)
	return since
}

// setPendingSince rewrites the pending-since time of id (pending_at and its holders record),
// as if it had been claimed at since.
func (e *env) setPendingSince(k groupKeys, id string, since int64) {
	e.T.Helper()
	r, ok := e.records(k)[id]
	require.True(e.T, ok, "%s has a holder", id)
	rec := r.consumer + ":" + strconv.Itoa(r.attempt) + ":" + strconv.FormatInt(since, 10) + ":" + r.extra
	require.NoError(e.T, e.C.HSet(e.Ctx, k.holders, id, rec).Err())
	require.NoError(e.T, e.C.ZAddXX(e.Ctx, k.pendingAt, zmember(float64(since), id)).Err())
	require.Equal(e.T, since, e.pendingSince(k, id))
}

// blockedClaim starts p as a blocking Claim on a client of its own and returns once it waits
// in BLMOVE; the channel gets its result.
func (e *env) blockedClaim(p *backend.ClaimParams) <-chan claimResult {
	e.T.Helper()
	name := e.Prefix + "-blocked"
	c := adaptertest.NamedClient(e.T, name, nil)
	b, err := New(c, Options{Prefix: e.Prefix})
	require.NoError(e.T, err)
	done := make(chan claimResult, 1)
	go func() {
		ds, err := b.Claim(e.Ctx, p)
		done <- claimResult{ds, err, time.Now()}
	}()
	e.WaitBlocked(name, "blmove", 1)
	return done
}

// claimResult is what a blocked Claim returned, and when.
type claimResult struct {
	ds  []backend.Delivery
	err error
	at  time.Time
}

// claimAll claims n deliveries without blocking, in as many claims as BatchSize takes.
func (e *env) claimAll(topic, group, consumer string, n int) []backend.Delivery {
	e.T.Helper()
	var all []backend.Delivery
	for len(all) < n {
		ds := e.Claim(topic, group, consumer, n-len(all))
		require.NotEmpty(e.T, ds, "claimed %d of %d", len(all), n)
		require.LessOrEqual(e.T, len(ds), e.b.e.BatchSize())
		all = append(all, ds...)
	}
	return all
}

// counts is res without NextExpiry, for comparing what a Reclaim did.
func counts(res backend.ReclaimResult) backend.ReclaimResult {
	res.NextExpiry = 0
	return res
}
