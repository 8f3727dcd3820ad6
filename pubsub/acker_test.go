package pubsub_test

import (
	"context"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// gatedAcks wraps a inner backend, records every Ack call, and holds the first one until
// gate is closed, as a slow round trip would.
type gatedAcks struct {
	backend.Backend
	gate chan struct{}

	mu    sync.Mutex
	calls []int // items per Ack call
}

func (g *gatedAcks) Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error) {
	g.mu.Lock()
	first := len(g.calls) == 0
	g.calls = append(g.calls, len(p.Items))
	g.mu.Unlock()
	if first {
		<-g.gate
	}
	return g.Backend.Ack(ctx, p)
}

func (g *gatedAcks) ackCalls() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.calls...)
}

// Acks that arrive while an Ack call is in flight go out together in the next call.
func TestAcksCoalesceWhileACallIsInFlight(t *testing.T) {
	t.Parallel()
	const n = 20
	inner := newBackend(t)
	b := &gatedAcks{Backend: inner, gate: make(chan struct{})}
	pub := newPublisher(t, inner)
	const topic = "coalesce"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{Concurrency: n, Prefetch: -1})
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	publishN(t, pub, topic, n)

	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = receive(t, ch)
	}
	for _, m := range msgs {
		require.True(t, m.Ack())
	}
	// The first ack's call is held until every ack is queued: a message's context is
	// cancelled once its ack is queued for the acker.
	waitQueued(t, msgs)
	close(b.gate)
	eventually(t, inner, topic, "all acked", func(st backend.Stats) bool { return st.Counters.Acked == n && st.Pending == 0 })

	calls := b.ackCalls()
	total := 0
	for _, c := range calls {
		total += c
	}
	require.Equal(t, n, total)
	require.LessOrEqual(t, len(calls), 2, "acks were not coalesced: items per call %v", calls)
}

// waitQueued waits until the acks or nacks of msgs are queued for the acker, which the
// subscriber signals by cancelling each message's context.
func waitQueued(t *testing.T, msgs []*message.Message) {
	t.Helper()
	deadline := time.After(waitFor)
	for _, m := range msgs {
		select {
		case <-m.Context().Done():
		case <-deadline:
			t.Fatalf("acks not queued within %v", waitFor)
		}
	}
}

// timingOutAcks wraps a backend: an Ack call of more than fits items runs in Redis, then fails
// as the Redis client fails a reply that outlasts its ReadTimeout.
type timingOutAcks struct {
	backend.Backend
	fits int

	mu    sync.Mutex
	calls []int           // items per call
	acked map[string]bool // IDs of the calls that succeeded
}

func (b *timingOutAcks) Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error) {
	res, err := b.Backend.Ack(ctx, p)
	if err != nil {
		return res, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, len(p.Items))
	if len(p.Items) > b.fits {
		return backend.AckResult{}, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	}
	for _, it := range p.Items {
		b.acked[it.ID] = true
	}
	return res, nil
}

func (b *timingOutAcks) record() (calls []int, acked int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.calls...), len(b.acked)
}

// Ack calls too large for the client's ReadTimeout (they run in Redis, but the reply comes
// too late) are split until they fit: every ack goes through a call that succeeds, and the
// group ends with every message acked and nothing pending, where the acker used to send the
// same call again for ever.
func TestAcksThatTimeOutAreSplit(t *testing.T) {
	t.Parallel()
	const n, fits = 200, 16
	inner := newBackend(t)
	gated := &gatedAcks{Backend: inner, gate: make(chan struct{})}
	b := &timingOutAcks{Backend: gated, fits: fits, acked: map[string]bool{}}
	pub := newPublisher(t, inner)
	const topic = "ack-timeouts"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{Concurrency: n, Prefetch: -1})
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	publishN(t, pub, topic, n)

	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = receive(t, ch)
		require.True(t, msgs[i].Ack())
	}
	waitQueued(t, msgs) // so that one call carries more than fits
	close(gated.gate)

	require.Eventually(t, func() bool {
		_, acked := b.record()
		return acked == n
	}, waitFor, 10*time.Millisecond, "not every ack went through a call that succeeded")
	st := eventually(t, inner, topic, "all acked", func(st backend.Stats) bool { return st.Counters.Acked == n && st.Pending == 0 })
	calls, _ := b.record()
	t.Logf("items per call: %v; stale acks (acks sent again after a call that ran): %d", calls, st.Counters.StaleAcks)
	require.Greater(t, slices.Max(calls), fits, "no call timed out")
}
