package pubsub

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// reclaimFake is a Backend of which only Reclaim and EnsureGroup work: Reclaim returns the
// given results in turn (then zero results) and both record their calls.
type reclaimFake struct {
	backend.Backend // nil: any other method panics

	mu       sync.Mutex
	results  []backend.ReclaimResult
	reclaims []time.Time // when each Reclaim call returned
	ensures  int
}

func (f *reclaimFake) Name() string { return "fake" }

func (f *reclaimFake) Reclaim(context.Context, *backend.ReclaimParams) (backend.ReclaimResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var res backend.ReclaimResult
	if i := len(f.reclaims); i < len(f.results) {
		res = f.results[i]
	}
	f.reclaims = append(f.reclaims, time.Now())
	return res, nil
}

func (f *reclaimFake) EnsureGroup(context.Context, *backend.EnsureGroupParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ensures++
	return nil
}

func (f *reclaimFake) calls() (reclaims []time.Time, ensures int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.reclaims...), f.ensures
}

// runReclaimLoop runs the reclaim loop of a subscription over b alone, until the test ends.
func runReclaimLoop(t *testing.T, b backend.Backend, c SubscriberConfig) {
	t.Helper()
	s, err := NewSubscriber(b, c, nil)
	require.NoError(t, err)
	sub := newSubscription(context.Background(), s, "t")
	sub.loopsWG.Add(1)
	go sub.reclaim()
	t.Cleanup(func() {
		close(sub.stopping)
		sub.cancelHard()
		sub.loopsWG.Wait()
		sub.cancelMsg()
	})
}

// waitReclaims waits until the loop has called Reclaim n times.
func waitReclaims(t *testing.T, f *reclaimFake, n int) []time.Time {
	t.Helper()
	require.Eventually(t, func() bool {
		r, _ := f.calls()
		return len(r) >= n
	}, commitWait, time.Millisecond, "%d Reclaim calls", n)
	r, _ := f.calls()
	return r
}

// The loop runs Reclaim again when the lease it reported expires, not an hour later at the
// next sweep; a full batch (a lease already due) runs again at once.
func TestReclaimRunsAtTheReportedExpiry(t *testing.T) {
	t.Parallel()
	f := &reclaimFake{results: []backend.ReclaimResult{
		{NextExpiry: 150 * time.Millisecond},
		{Reclaimed: 2, NextExpiry: 50 * time.Millisecond},
		{Reclaimed: 1000, NextExpiry: time.Millisecond}, // stopped at its bound, more due
		{Reclaimed: 7}, // nothing pending: back to the sweep
	}}
	runReclaimLoop(t, f, SubscriberConfig{ReclaimInterval: time.Hour})

	at := waitReclaims(t, f, 4)
	require.GreaterOrEqual(t, at[1].Sub(at[0]), 150*time.Millisecond, "ran before the lease expired")
	require.GreaterOrEqual(t, at[2].Sub(at[1]), 50*time.Millisecond, "ran before the lease expired")
}

// The loop never registers the group (a deleted group must stay deleted), at a sweep or at
// an expiry wake.
func TestReclaimNeverRegistersTheGroup(t *testing.T) {
	t.Parallel()
	f := &reclaimFake{results: []backend.ReclaimResult{{NextExpiry: time.Millisecond}, {Reclaimed: 1}}}
	runReclaimLoop(t, f, SubscriberConfig{ReclaimInterval: 5 * time.Millisecond})
	waitReclaims(t, f, 10)
	_, ensures := f.calls()
	require.Zero(t, ensures)
}

// A backend that keeps reporting a lease due that Reclaim cannot return makes the loop back
// off (doubling from a few milliseconds), not spin.
func TestReclaimBacksOffFromAStuckReport(t *testing.T) {
	t.Parallel()
	stuck := make([]backend.ReclaimResult, 100)
	for i := range stuck {
		stuck[i] = backend.ReclaimResult{NextExpiry: time.Millisecond}
	}
	f := &reclaimFake{results: stuck}
	runReclaimLoop(t, f, SubscriberConfig{ReclaimInterval: time.Hour})

	at := waitReclaims(t, f, 7)
	for i := 1; i < len(at) && i < 7; i++ {
		require.GreaterOrEqual(t, at[i].Sub(at[i-1]), expiryMargin<<(i-1), "wait %d", i)
	}
}

func TestReclaimWait(t *testing.T) {
	t.Parallel()
	const sweep = time.Minute
	// The margin is jittered by ±50%.
	lo, hi := expiryMargin/2, expiryMargin*3/2
	cases := []struct {
		name     string
		res      backend.ReclaimResult
		min, max time.Duration
	}{
		{name: "unknown", res: backend.ReclaimResult{}, min: sweep, max: sweep},
		{name: "nothing pending after work", res: backend.ReclaimResult{Reclaimed: 3}, min: sweep, max: sweep},
		{name: "expiry first", res: backend.ReclaimResult{NextExpiry: time.Second}, min: time.Second + lo, max: time.Second + hi},
		{name: "sweep first", res: backend.ReclaimResult{NextExpiry: time.Hour}, min: sweep, max: sweep},
		{name: "full batch", res: backend.ReclaimResult{Reclaimed: 100, NextExpiry: time.Millisecond}, min: time.Millisecond + lo, max: time.Millisecond + hi},
		{name: "negative", res: backend.ReclaimResult{Reclaimed: 100, NextExpiry: -time.Second}, min: lo, max: hi},
		{name: "consumers removed, more to go", res: backend.ReclaimResult{Removed: 50, NextExpiry: time.Millisecond}, min: time.Millisecond + lo, max: time.Millisecond + hi},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, idle := reclaimWait(tc.res, sweep, 0)
			require.GreaterOrEqual(t, got, tc.min)
			require.LessOrEqual(t, got, tc.max)
			require.Zero(t, idle)
		})
	}

	// Due but nothing done, again and again: the floor doubles up to the sweep.
	idle := time.Duration(0)
	for _, want := range []time.Duration{5, 10, 20, 40} {
		var got time.Duration
		got, idle = reclaimWait(backend.ReclaimResult{NextExpiry: time.Millisecond}, sweep, idle)
		require.Equal(t, want*time.Millisecond, idle)
		require.GreaterOrEqual(t, got, idle)
	}
	_, idle = reclaimWait(backend.ReclaimResult{NextExpiry: time.Millisecond}, 30*time.Millisecond, idle)
	require.Equal(t, 30*time.Millisecond, idle, "the floor never passes the sweep")
	_, idle = reclaimWait(backend.ReclaimResult{Reclaimed: 1, NextExpiry: time.Millisecond}, sweep, idle)
	require.Zero(t, idle, "progress resets the floor")
}
