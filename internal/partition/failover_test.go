package partition_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/partition"
)

// faulty stands for one primary failing beneath a partitioned topic: claims on topic wait
// until hold is closed (a dial to a dead primary spends the client's retries), and acks on it
// fail while acksFail is set.
type faulty struct {
	backend.Backend
	topic string
	hold  chan struct{}

	mu       sync.Mutex
	acksFail bool
}

func (f *faulty) Claim(ctx context.Context, p *backend.ClaimParams) ([]backend.Delivery, error) {
	if p.Topic == f.topic {
		select {
		case <-f.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.Backend.Claim(ctx, p)
}

func (f *faulty) Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error) {
	f.mu.Lock()
	fail := f.acksFail && p.Topic == f.topic
	f.mu.Unlock()
	if fail {
		return backend.AckResult{}, errNoAnswer
	}
	return f.Backend.Ack(ctx, p)
}

func newFaulty(t *testing.T, r *rig, l *partition.Layout, bad int) (*faulty, *partition.Backend) {
	t.Helper()
	inner, err := list.New(r.client, list.Options{Prefix: r.prefix})
	require.NoError(t, err)
	f := &faulty{Backend: inner, topic: l.Name(bad), hold: make(chan struct{})}
	b, err := partition.Wrap(f, partition.NativeConfig(r.client, r.prefix, l.Count()))
	require.NoError(t, err)
	return f, b
}

// A claim that hangs on one partition holds up a member's round for a moment only: the round
// returns the other partitions' messages, and a later round hands out what the slow claim got
// once it ended. Every message is claimed once.
func TestASlowPartitionDoesNotHoldUpTheRound(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	l, err := partition.New("orders", 4, r.tag)
	require.NoError(t, err)
	f, b := newFaulty(t, r, l, 1)
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
	require.NoError(t, b.Assign(ctx, "orders", "g", "c"))
	msgs := keyed(40, func(i int) string { return "k" + strconv.Itoa(i) })
	_, err = b.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: msgs})
	require.NoError(t, err)
	onSlow := 0
	for i := range msgs {
		if l.ForKey("k"+strconv.Itoa(i)) == 1 {
			onSlow++
		}
	}
	require.Positive(t, onSlow)

	claim := func() []backend.Delivery {
		ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: "orders", Group: "g", Consumer: "c", Count: 100, Lease: time.Minute})
		require.NoError(t, err)
		return ds
	}
	seen := map[string]int{}
	start := time.Now()
	for _, d := range claim() {
		seen[d.ID]++
	}
	require.Less(t, time.Since(start), 2*time.Second, "the round waited for the slow partition")
	require.Len(t, seen, len(msgs)-onSlow, "the round returns the other partitions' messages")

	close(f.hold)
	require.Eventually(t, func() bool {
		for _, d := range claim() {
			seen[d.ID]++
		}
		return len(seen) == len(msgs)
	}, 5*time.Second, 10*time.Millisecond, "the slow claim's messages come with a later round")
	for id, n := range seen {
		require.Equal(t, 1, n, "%s claimed more than once", id)
	}
}

// An ack batch spanning partitions, one of which fails, acks the others and reports the
// failed partition's items by their index in the batch; sent again, those are acked too.
func TestAPartialAckNamesTheFailedItems(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	l, err := partition.New("orders", 4, r.tag)
	require.NoError(t, err)
	f, b := newFaulty(t, r, l, 3)
	close(f.hold)
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
	_, err = b.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: keyed(20, func(i int) string { return "k" + strconv.Itoa(i) })})
	require.NoError(t, err)
	ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: "orders", Group: "g", Consumer: "c", Count: 100, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, ds, 20)

	f.mu.Lock()
	f.acksFail = true
	f.mu.Unlock()
	items := make([]backend.Held, len(ds))
	var want []int
	for j, d := range ds {
		items[j] = backend.Held{ID: d.ID, Attempt: d.Attempt}
		if d.ID[:2] == "3:" {
			want = append(want, j)
		}
	}
	require.NotEmpty(t, want)
	res, err := b.Ack(ctx, &backend.AckParams{Topic: "orders", Group: "g", Consumer: "c", Items: items})
	var pe *backend.PartialError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, errNoAnswer)
	require.Equal(t, want, pe.Failed)
	require.Equal(t, len(ds)-len(want), res.Acked)
	s, err := b.Stats(ctx, &backend.StatsParams{Topic: "orders", Group: "g"})
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), s.Pending, "only the failed partition's deliveries are still pending")

	f.mu.Lock()
	f.acksFail = false
	f.mu.Unlock()
	again := make([]backend.Held, 0, len(want))
	for _, j := range pe.Failed {
		again = append(again, items[j])
	}
	res, err = b.Ack(ctx, &backend.AckParams{Topic: "orders", Group: "g", Consumer: "c", Items: again})
	require.NoError(t, err)
	require.Equal(t, len(want), res.Acked)
}
