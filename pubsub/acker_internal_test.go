package pubsub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// settleFake is a Backend of which only Ack and Nack work, in memory. A call of more than
// fits items fails as a Redis client's ReadTimeout fails it; when ran is set, the call did its
// work first, like a script that finished after the client stopped waiting.
type settleFake struct {
	backend.Backend // nil: any other method panics
	ran             bool

	mu    sync.Mutex
	fits  int
	calls []int                // items per call, in order
	fails []bool               // whether each call timed out
	runs  map[backend.Held]int // calls that did their work with each item
	ok    map[backend.Held]int // calls that returned success with each item
}

func newSettleFake(fits int, ran bool) *settleFake {
	return &settleFake{fits: fits, ran: ran, runs: map[backend.Held]int{}, ok: map[backend.Held]int{}}
}

// clientTimeout is the error go-redis returns when a reply outlasts ReadTimeout.
var errReadTimeout = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

func (f *settleFake) Name() string { return "fake" }

func (f *settleFake) settle(items []backend.Held) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := len(items) > f.fits
	f.calls = append(f.calls, len(items))
	f.fails = append(f.fails, fail)
	for _, it := range items {
		if !fail || f.ran {
			f.runs[it]++
		}
		if !fail {
			f.ok[it]++
		}
	}
	if fail {
		return errReadTimeout
	}
	return nil
}

func (f *settleFake) Ack(_ context.Context, p *backend.AckParams) (backend.AckResult, error) {
	if err := f.settle(p.Items); err != nil {
		return backend.AckResult{}, err
	}
	return backend.AckResult{Acked: len(p.Items)}, nil
}

func (f *settleFake) Nack(_ context.Context, p *backend.NackParams) (backend.NackResult, error) {
	items := make([]backend.Held, len(p.Items))
	for i, it := range p.Items {
		items[i] = backend.Held{ID: it.ID, Attempt: it.Attempt}
	}
	if err := f.settle(items); err != nil {
		return backend.NackResult{}, err
	}
	return backend.NackResult{Requeued: len(items)}, nil
}

func (f *settleFake) setFits(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fits = n
}

// record returns the calls so far: items per call and whether each timed out, and how many
// distinct items went through a successful call.
func (f *settleFake) record() (calls []int, fails []bool, settled int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.calls...), append([]bool(nil), f.fails...), len(f.ok)
}

// runAcker queues n acks (or nacks) in a subscription over b, then runs its acker alone
// until the test ends.
func runAcker(t *testing.T, b backend.Backend, c SubscriberConfig, n int, nack bool) *subscription {
	t.Helper()
	s, err := NewSubscriber(b, c, nil)
	require.NoError(t, err)
	sub := newSubscription(context.Background(), s, "t")
	for i := range n {
		d := backend.Delivery{ID: strconv.Itoa(i + 1), Attempt: 1}
		if nack {
			sub.held.settleNack(backend.NackItem{ID: d.ID, Attempt: d.Attempt})
		} else {
			sub.held.settleAck(d)
		}
	}
	sub.ackerWG.Add(1)
	go sub.ack()
	wake(sub.ackerWake)
	t.Cleanup(func() {
		close(sub.ackerQuit)
		sub.cancelHard()
		sub.ackerWG.Wait()
		sub.cancelMsg()
	})
	return sub
}

// waitSettled waits until every one of n items went through a successful call and the
// subscription holds none of them any more.
func waitSettled(t *testing.T, f *settleFake, sub *subscription, n int) (calls []int, fails []bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, _, settled := f.record()
		return settled == n && len(sub.held.leases()) == 0
	}, commitWait, time.Millisecond, "items settled")
	calls, fails, _ = f.record()
	return calls, fails
}

// An ack call that times out on the client is split in halves and the halves sent again, until
// calls fit; every ack goes through, and no successful call is larger than what fits.
func TestAckerSplitsACallThatTimesOut(t *testing.T) {
	t.Parallel()
	for _, ran := range []bool{false, true} {
		t.Run("ran="+strconv.FormatBool(ran), func(t *testing.T) {
			t.Parallel()
			const n, fits = 1000, 100
			f := newSettleFake(fits, ran)
			sub := runAcker(t, f, SubscriberConfig{}, n, false)
			calls, fails := waitSettled(t, f, sub, n)
			require.Equal(t, []int{1000, 500, 250, 125, 62}, calls[:5], "each timeout halves the call")
			timeouts := 0
			for i, c := range calls {
				if fails[i] {
					timeouts++
					continue
				}
				require.LessOrEqual(t, c, fits)
			}
			require.LessOrEqual(t, timeouts, 6, "calls: %v", calls)
		})
	}
}

// Nacks are split the same way.
func TestAckerSplitsANackCallThatTimesOut(t *testing.T) {
	t.Parallel()
	const n, fits = 300, 40
	f := newSettleFake(fits, true)
	sub := runAcker(t, f, SubscriberConfig{}, n, true)
	calls, fails := waitSettled(t, f, sub, n)
	require.Equal(t, []int{300, 150, 75, 37}, calls[:4])
	for i, c := range calls {
		if !fails[i] {
			require.LessOrEqual(t, c, fits)
		}
	}
}

// However many acks wait, one call carries at most AckBatch of them.
func TestAckerBoundsACall(t *testing.T) {
	t.Parallel()
	f := newSettleFake(1<<30, false)
	sub := runAcker(t, f, SubscriberConfig{}, 2500, false)
	calls, _ := waitSettled(t, f, sub, 2500)
	require.Equal(t, []int{AckBatchDefault, AckBatchDefault, 500}, calls)

	f = newSettleFake(1<<30, false)
	sub = runAcker(t, f, SubscriberConfig{AckBatch: 64}, 200, true)
	calls, _ = waitSettled(t, f, sub, 200)
	require.Equal(t, []int{64, 64, 64, 8}, calls)
}

// A call of one ack that keeps timing out (Redis is slow, not the batch too large) is sent
// again with backoff and never dropped; once calls fit again, every ack goes through.
func TestAckerRetriesASingleAckThatTimesOut(t *testing.T) {
	t.Parallel()
	f := newSettleFake(0, false)
	sub := runAcker(t, f, SubscriberConfig{RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond}, 4, false)
	require.Eventually(t, func() bool {
		calls, _, _ := f.record()
		return len(calls) >= 10
	}, commitWait, time.Millisecond)
	calls, _, _ := f.record()
	require.Equal(t, []int{4, 2, 1, 1, 1}, calls[:5])
	require.Len(t, sub.held.leases(), 4, "acks were dropped")
	f.setFits(1)
	waitSettled(t, f, sub, 4)
}

// Results waiting for the acker beyond one full batch count against the claimer's capacity,
// so a subscription whose acks lag stops claiming.
func TestHeldSetCountsTheAckBacklog(t *testing.T) {
	t.Parallel()
	var h heldSet
	h.init(3)
	ds := make([]backend.Delivery, 6)
	for i := range ds {
		ds[i] = backend.Delivery{ID: strconv.Itoa(i + 1), Attempt: 1}
		h.add(ds[i])
		require.True(t, h.take(ds[i]))
	}
	require.Equal(t, 6, h.activeCount())
	for _, d := range ds[:5] {
		h.settleAck(d)
	}
	require.Equal(t, 1+2, h.activeCount(), "one handling, two acks beyond the backlog")
	h.settleNack(backend.NackItem{ID: "corrupt", Attempt: 1}) // never buffered
	require.Equal(t, 1+3, h.activeCount())
	h.forget(key(ds[0]))
	h.forget(key(ds[1]))
	h.forget(backend.Held{ID: "corrupt", Attempt: 1})
	require.Equal(t, 1, h.activeCount())
	require.Len(t, h.leases(), 4)
}

// Only a call the client stopped waiting for is split: not a dial that timed out, a context
// deadline, or any other failure.
func TestClientTimeout(t *testing.T) {
	t.Parallel()
	require.True(t, clientTimeout(errReadTimeout))
	require.True(t, clientTimeout(fmt.Errorf("engine: %w", errReadTimeout)))
	require.False(t, clientTimeout(&net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}))
	require.False(t, clientTimeout(context.DeadlineExceeded))
	require.False(t, clientTimeout(errors.New("ERR something")))
	require.False(t, clientTimeout(nil))
}
