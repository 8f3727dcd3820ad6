package pubsub

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// downFake is a Backend of which only Ack works, in memory: an ID of a partition that is
// down fails, the others are acked, and a call that mixes them reports a
// *backend.PartialError, as a partitioned topic does while one primary fails over.
type downFake struct {
	backend.Backend // nil: any other method panics

	mu    sync.Mutex
	down  map[string]bool // partition (the ID's first byte) that fails
	acked map[string]int
}

func (f *downFake) Name() string { return "fake" }

func (f *downFake) Ack(_ context.Context, p *backend.AckParams) (backend.AckResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pe := &backend.PartialError{Err: errors.New("connection refused")}
	for j, it := range p.Items {
		if f.down[it.ID[:1]] {
			pe.Failed = append(pe.Failed, j)
			continue
		}
		f.acked[it.ID]++
	}
	if len(pe.Failed) > 0 {
		return backend.AckResult{}, pe
	}
	return backend.AckResult{Acked: len(p.Items)}, nil
}

func (f *downFake) setDown(part string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[part] = down
}

func (f *downFake) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked[id]
}

// While one partition's primary is down, acks of the other partitions go through at once,
// including those queued after the failure; the failed partition's acks stay held (so the
// heartbeat keeps their leases) and go through once it is back. Nothing is acked twice.
func TestAckerKeepsAFailedPartitionsAcksForLater(t *testing.T) {
	t.Parallel()
	f := &downFake{down: map[string]bool{"b": true}, acked: map[string]int{}}
	s, err := NewSubscriber(f, SubscriberConfig{RetryMin: 20 * time.Millisecond, RetryMax: 40 * time.Millisecond}, nil)
	require.NoError(t, err)
	sub := newSubscription(context.Background(), s, "t")
	ack := func(id string) {
		sub.held.add(backend.Delivery{ID: id, Attempt: 1})
		sub.held.settleAck(backend.Delivery{ID: id, Attempt: 1})
		wake(sub.ackerWake)
	}
	for i := range 4 {
		ack("a" + strconv.Itoa(i))
		ack("b" + strconv.Itoa(i))
	}
	sub.ackerWG.Add(1)
	go sub.ack()
	t.Cleanup(func() {
		close(sub.ackerQuit)
		sub.cancelHard()
		sub.ackerWG.Wait()
		sub.cancelMsg()
	})
	require.Eventually(t, func() bool { return f.count("a3") == 1 }, commitWait, time.Millisecond, "the healthy partition's acks")
	for i := 4; i < 8; i++ {
		ack("a" + strconv.Itoa(i)) // queued while b's acks wait
	}
	require.Eventually(t, func() bool { return f.count("a7") == 1 }, commitWait, time.Millisecond, "acks queued after the failure")
	require.Len(t, sub.held.leases(), 4, "b's acks are held until they go through")
	require.Zero(t, f.count("b0"))

	f.setDown("b", false)
	require.Eventually(t, func() bool { return len(sub.held.leases()) == 0 }, commitWait, time.Millisecond, "b's acks once it is back")
	for _, p := range []string{"a", "b"} {
		for i := range 4 {
			require.Equal(t, 1, f.count(p+strconv.Itoa(i)), "%s%d", p, i)
		}
	}
}
