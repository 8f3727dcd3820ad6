package partition_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/partition"
	"github.com/relq/relq/internal/redistest"
)

// rig makes partition Backends over the list backend, all under one prefix, as processes
// configured alike (or not) would.
type rig struct {
	t      *testing.T
	client redis.UniversalClient
	prefix string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return &rig{t: t, client: redistest.Shared(t).Client(t), prefix: redistest.Prefix(t)}
}

func (r *rig) tag(topic string) string { return keys.Tag(r.prefix, topic) }

// backend makes a process's Backend with p partitions per topic.
func (r *rig) backend(p int) *partition.Backend {
	r.t.Helper()
	inner, err := list.New(r.client, list.Options{Prefix: r.prefix})
	require.NoError(r.t, err)
	b, err := partition.Wrap(inner, partition.NativeConfig(r.client, r.prefix, p))
	require.NoError(r.t, err)
	return b
}

func keyed(n int, key func(i int) string) []backend.OutMessage {
	out := make([]backend.OutMessage, n)
	for i := range out {
		out[i].Envelope = backend.Envelope{UUID: fmt.Sprintf("m-%d", i), Payload: []byte(strconv.Itoa(i)),
			Metadata: map[string]string{backend.MetadataKey: key(i)}}
	}
	return out
}

// A message lands on the partition its key hashes to, and its delivery ID names it.
func TestKeysLandOnTheirPartition(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	b := r.backend(8)
	ctx := context.Background()
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
	key := func(i int) string { return "customer-" + strconv.Itoa(i%20) }
	res, err := b.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: keyed(200, key)})
	require.NoError(t, err)
	l, err := partition.New("orders", 8, r.tag)
	require.NoError(t, err)
	perPartition := map[string]int64{}
	for i, id := range res.IDs {
		want := l.ForKey(key(i))
		require.Equal(t, strconv.Itoa(want)+":", id[:len(strconv.Itoa(want))+1], "message %d (key %s)", i, key(i))
		perPartition[l.Name(want)]++
	}
	inner, err := list.New(r.client, list.Options{Prefix: r.prefix})
	require.NoError(t, err)
	for i := range 8 {
		s, err := inner.Stats(ctx, &backend.StatsParams{Topic: l.Name(i), Group: "g"})
		require.NoError(t, err)
		require.Equal(t, perPartition[l.Name(i)], s.Ready, "partition %d holds the messages of its keys", i)
	}
}

// A process configured with another count, or unpartitioned, is refused on a partitioned
// topic, and writes nothing; a deleted topic may be created again with another count.
func TestWrongCountIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	four := r.backend(4)
	_, err := four.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: keyed(3, strconv.Itoa)})
	require.NoError(t, err)
	for _, p := range []int{1, 8} {
		other := r.backend(p)
		_, err := other.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: keyed(1, strconv.Itoa)})
		var ce *partition.CountError
		require.ErrorAs(t, err, &ce, "a publish with %d partitions", p)
		require.Equal(t, partition.CountError{Topic: "orders", Configured: p, Recorded: 4}, *ce)
		_, err = other.Stats(ctx, &backend.StatsParams{Topic: "orders", Group: "g"})
		require.ErrorIs(t, err, partition.ErrCountMismatch, "a read with %d partitions", p)
	}
	require.NoError(t, four.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
	require.NoError(t, four.DeleteTopic(ctx, "orders"))
	require.Zero(t, r.client.Exists(ctx, partition.RecordKey(r.tag("orders"))).Val(), "the record goes with the topic")
	_, err = r.backend(8).Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: keyed(1, strconv.Itoa)})
	require.NoError(t, err, "a deleted topic is created again with another count")
}

// Subscriptions of a group hold shares that differ by at most one partition, every partition
// is held, and a member that stops being heard from loses its share after its lease.
func TestSharesAreEvenAndTakenOver(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	const p, lease = 10, time.Second
	b := r.backend(p)
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
	members := []string{"a", "b", "c"}
	for _, m := range members {
		require.NoError(t, b.Assign(ctx, "orders", "g", m))
	}
	// Every member claims until the shares settle: 4, 3, 3.
	owned := func(m string) []int {
		_, err := b.Claim(ctx, &backend.ClaimParams{Topic: "orders", Group: "g", Consumer: m, Lease: lease})
		require.NoError(t, err)
		return b.Owned("orders", "g", m)
	}
	require.Eventually(t, func() bool {
		seen, sizes := map[int]bool{}, []int{}
		for _, m := range members {
			o := owned(m)
			sizes = append(sizes, len(o))
			for _, i := range o {
				seen[i] = true
			}
		}
		return len(seen) == p && fmt.Sprint(sizes) == "[4 3 3]"
	}, 5*time.Second, 10*time.Millisecond)

	// "c" stops: within its lease and a sync period, a and b hold every partition, 5 each.
	stopped := time.Now()
	require.Eventually(t, func() bool {
		oa, ob := owned("a"), owned("b") // both, every time: a member that stops claiming stops being one
		return len(oa) == 5 && len(ob) == 5
	}, 5*time.Second, 10*time.Millisecond)
	took := time.Since(stopped)
	require.Less(t, took, lease+300*time.Millisecond, "takeover after the lease")
	t.Logf("takeover %v after the last word of a member with a %v lease", took, lease)
}

// An unknown or foreign ID holds nothing: acks count it stale, lease extensions lose it.
func TestForeignIDsHoldNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	b := r.backend(4)
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
	items := []backend.Held{{ID: "9:123", Attempt: 1}, {ID: "x", Attempt: 1}, {ID: "01:5", Attempt: 1}}
	res, err := b.Ack(ctx, &backend.AckParams{Topic: "orders", Group: "g", Consumer: "c", Items: items})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Stale: 3}, res)
	lost, err := b.Extend(ctx, &backend.ExtendParams{Topic: "orders", Group: "g", Consumer: "c", Items: items, Lease: time.Second})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"9:123", "x", "01:5"}, lost)
	_, err = b.Message(ctx, &backend.MessageParams{Topic: "orders", Group: "g", ID: "x"})
	require.True(t, errors.Is(err, backend.ErrMessageNotFound))
}

// claimCounter counts the claims that reach the backend beneath.
type claimCounter struct {
	backend.Backend
	claims atomic.Int64
}

func (c *claimCounter) Claim(ctx context.Context, p *backend.ClaimParams) ([]backend.Delivery, error) {
	c.claims.Add(1)
	return c.Backend.Claim(ctx, p)
}

// An idle member asks only the partition a publish rang for, not each of its partitions.
func TestIdleMemberAsksOnlyTheRungPartition(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	inner, err := list.New(r.client, list.Options{Prefix: r.prefix})
	require.NoError(t, err)
	counted := &claimCounter{Backend: inner}
	b, err := partition.Wrap(counted, partition.NativeConfig(r.client, r.prefix, 8))
	require.NoError(t, err)
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
	require.NoError(t, b.Assign(ctx, "orders", "g", "c"))
	claim := func() []backend.Delivery {
		ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: "orders", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: 5 * time.Second})
		require.NoError(t, err)
		return ds
	}
	ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: "orders", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, ds)
	require.Equal(t, int64(8), counted.claims.Load(), "the first round asks each partition once")

	for round := range 3 {
		before := counted.claims.Load()
		_, err = b.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: keyed(1, func(int) string { return "k" + strconv.Itoa(round) })})
		require.NoError(t, err)
		require.Len(t, claim(), 1)
		require.Equal(t, int64(1), counted.claims.Load()-before, "round %d: one claim, in the partition rung", round)
	}
}

// failingClaims fails every claim on one topic of the backend beneath, as a primary that does
// not answer would.
type failingClaims struct {
	backend.Backend
	topic string
}

var errNoAnswer = errors.New("dial tcp: connection refused")

func (f *failingClaims) Claim(ctx context.Context, p *backend.ClaimParams) ([]backend.Delivery, error) {
	if p.Topic == f.topic {
		return nil, errNoAnswer
	}
	return f.Backend.Claim(ctx, p)
}

// A partition that fails holds up only itself: a round claims from the others, and fails only
// when every partition it asked failed.
func TestAFailingPartitionHoldsUpOnlyItself(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	inner, err := list.New(r.client, list.Options{Prefix: r.prefix})
	require.NoError(t, err)
	l, err := partition.New("orders", 4, r.tag)
	require.NoError(t, err)
	failing := &failingClaims{Backend: inner, topic: l.Name(2)}
	b, err := partition.Wrap(failing, partition.NativeConfig(r.client, r.prefix, 4))
	require.NoError(t, err)
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
	require.NoError(t, b.Assign(ctx, "orders", "g", "c"))
	msgs := keyed(40, func(i int) string { return "k" + strconv.Itoa(i) })
	_, err = b.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: msgs})
	require.NoError(t, err)
	want := 0
	for i := range msgs {
		if l.ForKey("k"+strconv.Itoa(i)) != 2 {
			want++
		}
	}
	got := 0
	require.Eventually(t, func() bool {
		ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: "orders", Group: "g", Consumer: "c", Count: 100, Lease: time.Minute})
		require.NoError(t, err, "a round that reached other partitions does not fail")
		got += len(ds)
		return got == want
	}, 5*time.Second, 10*time.Millisecond, "the messages of the partitions that answer")

	only, err := partition.Wrap(&failingClaims{Backend: inner, topic: l.Name(2)}, partition.NativeConfig(r.client, r.prefix, 1))
	require.NoError(t, err)
	_, err = only.Claim(ctx, &backend.ClaimParams{Topic: l.Name(2), Group: "g", Consumer: "d", Lease: time.Minute})
	require.ErrorIs(t, err, errNoAnswer, "a round whose every partition failed fails")
}
