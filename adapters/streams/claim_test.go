package streams

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/seal"
	"github.com/stretchr/testify/require"
)

func TestClaimPutsEntriesInThePELOfTheConsumerWithItsLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "1", "2", "3")

	ds := e.ClaimLease("t", "g", "c", 2, 1500*time.Millisecond)
	require.Equal(t, published[:2], adaptertest.IDs(ds))
	require.Equal(t, []string{"1", "2"}, adaptertest.Payloads(ds))
	for _, d := range ds {
		require.Equal(t, 1, d.Attempt)
	}
	require.Equal(t, map[string]pel{published[0]: {"c", 1}, published[1]: {"c", 1}}, e.pel("t", "g"))
	require.Equal(t, map[string]string{"c": "1500"}, e.Hash(k.leases), "the lease the consumer claims with")
	zs, err := e.C.ZRange(e.Ctx, k.pendingAt, 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, published[:2], zs)
	require.Equal(t, counts{Ready: 1, Pending: 2}, e.counts("t", "g"))
	require.Equal(t, int64(2), e.Stats("t", "g").Counters.Claimed)
	require.Empty(t, e.retry("t", "g"))
}

func TestBlockedClaimIsWokenByAPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A client of its own, named, to see it blocked in CLIENT LIST.
	c := adaptertest.NamedClient(t, e.Prefix, nil)
	b, err := New(c, Options{Prefix: e.Prefix})
	require.NoError(t, err)
	e.EnsureGroup("t", "g")

	const block = 20 * time.Second
	type result struct {
		ds  []backend.Delivery
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ds, err := b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
		done <- result{ds, err, time.Now()}
	}()
	require.Eventually(t, func() bool {
		for line := range strings.Lines(e.C.ClientList(e.Ctx).Val()) {
			if strings.Contains(line, "name="+e.Prefix+" ") && strings.Contains(line, "cmd=xread ") {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "the claim should block in XREAD")

	published := time.Now()
	e.Publish("t", "wake", "more")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{"wake", "more"}, adaptertest.Payloads(r.ds), "the claim after the wake-up takes the batch")
	require.Less(t, r.at.Sub(published), block/2, "woken by the publish, not by the end of Block")
	t.Logf("pickup after publish: %v", r.at.Sub(published))
}

func TestClaimReturnsNothingWhenBlockEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	start := time.Now()
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 20 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.Empty(t, e.pel("t", "g"))
}

func TestClaimReturnsWhenTheContextIsCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ctx, cancel := context.WithTimeout(e.Ctx, 50*time.Millisecond)
	defer cancel()
	ds, err := e.b.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: time.Hour})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, ds)
}

// A claim of a group that is not registered, and was not deleted by an operator (no
// tombstone), fails with ErrGroupLost, on which a subscription registers the group again.
func TestClaimOnAGroupThatIsNotRegisteredFailsAndCreatesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	claim := func(block time.Duration) error {
		_, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: block})
		return err
	}
	require.ErrorIs(t, claim(0), backend.ErrGroupLost, "no stream")
	require.Empty(t, e.Keys("t"))
	e.Publish("t", "x")
	e.EnsureGroup("t", "other")
	require.ErrorIs(t, claim(time.Second), backend.ErrGroupLost, "a stream without that group")
	require.Equal(t, []string{"other"}, groupsOf(t, e, "t"))
	require.NotContains(t, strings.Join(e.Keys("t"), " "), "g:g:")
}

func TestClaimRejectsTheParkingConsumerAndANonPositiveLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: ParkedConsumer, Count: 1, Lease: time.Second})
	require.ErrorIs(t, err, backend.ErrInvalidName)
	_, err = e.b.Ack(e.Ctx, &backend.AckParams{Topic: "t", Group: "g", Consumer: ParkedConsumer})
	require.ErrorIs(t, err, backend.ErrInvalidName)
	_, err = e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
}

func TestDelayedPublishIsParkedUntilDueAndDeliveredAsTheFirstAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	before := e.redisNow()
	later := e.PublishDelayed("t", time.Hour, "later")[0]
	after := e.redisNow()
	now := e.Publish("t", "now")[0]
	require.Equal(t, counts{Ready: 1, Delayed: 1}, e.counts("t", "g"), "unread delayed entries count as delayed")

	ds := e.Claim("t", "g", "c", 10)
	require.Equal(t, []string{now}, adaptertest.IDs(ds))
	require.Equal(t, map[string]pel{later: {ParkedConsumer, 0}, now: {"c", 1}}, e.pel("t", "g"),
		"read, parked by the claim, not counted as an attempt")
	requireDueWithin(t, e.retry("t", "g")[later], before, after, time.Hour)
	require.Equal(t, counts{Delayed: 1, Pending: 1}, e.counts("t", "g"))

	// A blocking claim parks an entry due soon, and wakes for its due time, not at the end of
	// Block. (Published only now, so that no slowness of the steps above can make it due early.)
	const block, delay = 20 * time.Second, 200 * time.Millisecond
	start := time.Now()
	soon := e.PublishDelayed("t", delay, "soon")[0]
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
	require.NoError(t, err)
	require.Equal(t, []string{soon}, adaptertest.IDs(ds))
	require.Equal(t, 1, ds[0].Attempt)
	require.GreaterOrEqual(t, time.Since(start), delay-time.Millisecond, "not before it is due (in Redis's milliseconds)")
	require.Less(t, time.Since(start), block/2, "woken at the due time, not at the end of Block")
	require.Equal(t, counts{Delayed: 1, Pending: 2}, e.counts("t", "g"))
}

func TestCorruptEntryIsClaimedWithAnError(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) {
		topic := "t-" + e.Prefix
		require.NoError(t, seal.Open(e.b).InjectCorrupt(e.Ctx, topic, "g", []byte("\x07garbage")))
		_, err := e.C.XAdd(e.Ctx, &redis.XAddArgs{Stream: e.tk(topic).stream, Values: []string{"foreign", "data"}}).Result()
		require.NoError(t, err)
		e.Publish(topic, "good")

		ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: topic, Group: "g", Consumer: "c", Count: 10, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, ds, 3)
		require.ErrorIs(t, ds[0].Err, backend.ErrCorruptEntry)
		require.ErrorIs(t, ds[1].Err, backend.ErrCorruptEntry)
		require.NoError(t, ds[2].Err)
		require.Equal(t, "good", string(ds[2].Envelope.Payload))
	})
}

func TestInjectOrphanIsNotImplemented(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := seal.Open(e.b).InjectOrphan(e.Ctx, "t", "g")
	require.ErrorIs(t, err, backend.ErrNotImplemented)
}

// An entry whose ID is ahead of the Redis clock (Redis keeps issuing IDs from its last time
// after the clock steps back; another writer may choose IDs) is due now, not at its ID's time.
func TestAnEntryWithAnIDAheadOfTheClockIsDueNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	future := strconv.FormatInt(e.redisNow().Add(time.Hour).UnixMilli(), 10) + "-0"
	require.NoError(t, e.C.XAdd(e.Ctx, &redis.XAddArgs{Stream: e.tk("t").stream, ID: future,
		Values: []any{FieldEnvelope, backend.EncodeEnvelope(adaptertest.Envelope("ahead"))}}).Err())
	ds := e.Claim("t", "g", "c", 5)
	require.Equal(t, []string{future}, adaptertest.IDs(ds))

	require.Equal(t, backend.NackResult{Requeued: 1}, e.Nack("t", "g", "c", 0, backend.NackItem{ID: future, Attempt: 1, Release: true}))
	require.Equal(t, counts{Ready: 1}, e.counts("t", "g"))
	require.Equal(t, []string{future}, adaptertest.IDs(e.Claim("t", "g", "c", 5)), "released, it is due at once too")
}

// A claim reads at most BatchSize unread entries per script call; behind more delayed ones
// than that, it calls the script again at once rather than waiting for a publish.
func TestClaimReadsPastMoreDelayedEntriesThanOneScriptScans(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 3 })
	e.EnsureGroup("t", "g")
	e.PublishDelayed("t", time.Hour, "1", "2", "3", "4", "5", "6", "7")
	now := e.Publish("t", "now")

	const block = 20 * time.Second
	start := time.Now()
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: block})
	require.NoError(t, err)
	require.Equal(t, now, adaptertest.IDs(ds))
	require.Less(t, time.Since(start), block/2, "read on at once, not at the end of Block")
	require.Equal(t, counts{Delayed: 7, Pending: 1}, e.counts("t", "g"))
}
