package streams

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// idleEntries counts what the backend remembers of idle consumers.
func idleEntries(b *Backend) int {
	n := 0
	b.idle.m.Range(func(any, any) bool {
		n++
		return true
	})
	return n
}

// Whatever a subscription leaves in the backend goes when it ends: 25 subscriptions, each
// receiving a message, waiting idle in its claim and then cancelled, leave no idle state in
// the process, and a Reclaim once they are quiet deletes their consumer names from the group.
func TestSubscribeCancelCyclesLeaveNoStateBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.ConsumerIdleTimeout = time.Millisecond })
	pub, err := pubsub.NewPublisher(e.b, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	sub, err := pubsub.NewSubscriber(e.b, pubsub.SubscriberConfig{Group: "g", Lease: 300 * time.Millisecond}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sub.Close()) })

	const cycles = 25
	for i := range cycles {
		ctx, cancel := context.WithCancel(e.Ctx)
		msgs, err := sub.Subscribe(ctx, "t")
		require.NoError(t, err)
		require.NoError(t, pub.Publish("t", message.NewMessage(watermill.NewUUID(), []byte("x"))))
		select {
		case m := <-msgs:
			m.Ack()
		case <-time.After(10 * time.Second):
			require.FailNow(t, "no message", "cycle %d", i)
		}
		require.Eventually(t, func() bool { return idleEntries(e.b) == 1 }, 10*time.Second, time.Millisecond,
			"cycle %d: the subscription should wait idle in its claim", i)
		cancel()
		for range msgs { // closed once the subscription has ended
		}
		require.Zero(t, idleEntries(e.b), "cycle %d: the ended subscription's idle state should be gone", i)
	}

	// Every consumer holds nothing: once its lease ended, a Reclaim finds it empty and marks it
	// quiet, and a millisecond later one deletes it.
	require.Eventually(t, func() bool {
		res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g"})
		require.NoError(t, err)
		cs, err := e.C.XInfoConsumers(e.Ctx, e.tk("t").stream, "g").Result()
		require.NoError(t, err)
		return len(cs) == 0 && res.NextExpiry == 0
	}, 10*time.Second, time.Millisecond, "the consumers of ended subscriptions should be deleted, and no holder left")
	k := e.gk("t", "g")
	for _, key := range []string{k.holders, k.quiet, k.leases} {
		require.Zero(t, e.C.Exists(e.Ctx, key).Val(), key)
	}
}

// A subscription that ends between two Claims leaves its entry behind; the next store after
// idleStale drops every entry no Claim used for that long, and keeps the others.
func TestIdleStateUnusedForIdleStaleIsDropped(t *testing.T) {
	t.Parallel()
	var i idleConsumers
	old, live := idleKey{"t", "g", "ended"}, idleKey{"t", "g", "live"}
	i.m.Store(old, idleState{used: time.Now().Add(-idleStale)})
	i.store(live, idleState{last: "1-0"})
	_, ok := i.load(old)
	require.False(t, ok, "unused for idleStale")
	st, ok := i.load(live)
	require.True(t, ok)
	require.Equal(t, "1-0", st.last)

	i.m.Store(old, idleState{used: time.Now().Add(-idleStale)})
	i.store(live, idleState{last: "2-0"})
	_, ok = i.load(old)
	require.True(t, ok, "one pass per idleStale at most")
}

// Reclaim deletes at most reclaimStep quiet consumers per call, and reports more while it
// meets that many, so that the reclaim loop goes on at once: no call reads every consumer.
func TestReclaimDeletesQuietConsumersAStepPerCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.ConsumerIdleTimeout = time.Millisecond })
	e.EnsureGroup("t", "g")
	n := 2*reclaimStep + 10
	e.Publish("t", payloads("x", n)...)
	for i := range n {
		consumer := "c" + strconv.Itoa(i)
		e.Ack("t", "g", consumer, e.ClaimLease("t", "g", consumer, 1, 10*time.Millisecond)...)
	}
	consumers := func() int {
		cs, err := e.C.XInfoConsumers(e.Ctx, e.tk("t").stream, "g").Result()
		require.NoError(t, err)
		return len(cs)
	}
	require.Equal(t, n, consumers())
	require.Eventually(t, func() bool { // every lease ended: every holder is due
		return e.C.ZCount(e.Ctx, e.gk("t", "g").holders, "-inf", strconv.FormatInt(e.redisNow().UnixMilli(), 10)).Val() == int64(n)
	}, 10*time.Second, time.Millisecond)

	removed, calls := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	for consumers() > 0 && time.Now().Before(deadline) {
		res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g"})
		require.NoError(t, err)
		require.LessOrEqual(t, res.Removed, reclaimStep)
		if res.Removed == reclaimStep {
			require.Equal(t, time.Millisecond, res.NextExpiry, "a full step: more may be quiet")
		}
		removed += res.Removed
		calls++
	}
	require.Zero(t, consumers())
	require.Equal(t, n, removed)
	require.GreaterOrEqual(t, calls, 3, "no call deletes more than a step")
	res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Zero(t, res.NextExpiry)
	k := e.gk("t", "g")
	for _, key := range []string{k.holders, k.quiet, k.leases} {
		require.Zero(t, e.C.Exists(e.Ctx, key).Val(), key)
	}
}

// ConsumerIdleTimeout -1 keeps every consumer: claims index none as quiet, and Reclaim deletes
// none. A consumer of another program is never deleted either, even with nothing pending.
func TestReclaimKeepsConsumersWhenToldAndThoseOfOtherPrograms(t *testing.T) {
	t.Parallel()
	keep := newEnv(t, func(o *Options) { o.ConsumerIdleTimeout = -1 })
	other := newEnv(t, func(o *Options) { o.ConsumerIdleTimeout = time.Millisecond })
	for _, e := range []*env{keep, other} {
		e.EnsureGroup("t", "g")
		e.Publish("t", "x", "y")
	}
	keep.Ack("t", "g", "c", keep.Claim("t", "g", "c", 1)...)
	require.Zero(t, keep.C.Exists(keep.Ctx, keep.gk("t", "g").quiet).Val())
	// watermill-redisstream's consumer reads and acks by itself.
	stream := other.tk("t").stream
	got, err := other.C.XReadGroup(other.Ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "foreign", Streams: []string{stream, ">"}, Count: 1}).Result()
	require.NoError(t, err)
	require.NoError(t, other.C.XAck(other.Ctx, stream, "g", got[0].Messages[0].ID).Err())

	time.Sleep(5 * time.Millisecond) // past the 1 ms quiet period, were foreign indexed
	for _, e := range []*env{keep, other} {
		for range 3 {
			_, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g"})
			require.NoError(t, err)
		}
	}
	cs, err := keep.C.XInfoConsumers(keep.Ctx, keep.tk("t").stream, "g").Result()
	require.NoError(t, err)
	require.Len(t, cs, 1, "kept")
	cs, err = other.C.XInfoConsumers(other.Ctx, stream, "g").Result()
	require.NoError(t, err)
	require.Len(t, cs, 1, "another program's consumer stays")
	require.Equal(t, "foreign", cs[0].Name)
}

// With the default ConsumerIdleTimeout, a consumer is deleted a lease after a Reclaim found it
// holding nothing, which is at the earliest a lease after its claim: never while it may
// still hold what it claimed.
func TestConsumerIsQuietALeaseAfterItHeldNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	const lease = 300 * time.Millisecond
	claimed := time.Now()
	e.Ack("t", "g", "c", e.ClaimLease("t", "g", "c", 1, lease)...)
	consumers := func() int {
		cs, err := e.C.XInfoConsumers(e.Ctx, e.tk("t").stream, "g").Result()
		require.NoError(t, err)
		return len(cs)
	}

	res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g"})
	require.NoError(t, err)
	require.Zero(t, res.Removed)
	require.Equal(t, 1, consumers(), "a consumer within its lease stays")
	require.Eventually(t, func() bool {
		res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g"})
		require.NoError(t, err)
		return res.Removed == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(claimed), 2*lease-20*time.Millisecond,
		"deleted a lease after its lease ended, not sooner")
	require.Zero(t, consumers())
}

// A claim whose read found only entries not due yet parks them, but its XREADGROUP made the
// consumer in the group all the same: it is indexed, and deleted once quiet.
func TestConsumerOfAClaimThatOnlyParkedIsDeletedOnceQuiet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.ConsumerIdleTimeout = time.Millisecond })
	e.EnsureGroup("t", "g")
	_, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{
		{Envelope: adaptertest.Envelope("later"), Delay: time.Hour}}})
	require.NoError(t, err)
	require.Empty(t, e.Claim("t", "g", "c", 1))
	consumers := func() []string {
		cs, err := e.C.XInfoConsumers(e.Ctx, e.tk("t").stream, "g").Result()
		require.NoError(t, err)
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		return names
	}
	require.Contains(t, consumers(), "c", "the read made the consumer")
	require.Eventually(t, func() bool {
		res, err := e.b.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: "t", Group: "g"})
		require.NoError(t, err)
		return res.Removed == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.NotContains(t, consumers(), "c")
	require.Equal(t, int64(1), e.counts("t", "g").Delayed, "the parked message stays")
}
