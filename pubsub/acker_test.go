package pubsub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/pubsub"
)

// gatedAcks wraps a inner backend, records every Ack call, and holds the first one until
// gate is closed, as a slow round trip would.
type gatedAcks struct {
	pubsub.Backend
	gate chan struct{}

	mu    sync.Mutex
	calls []int // items per Ack call
}

func (g *gatedAcks) Ack(ctx context.Context, p *pubsub.AckParams) (pubsub.AckResult, error) {
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
	eventually(t, inner, topic, "all acked", func(st pubsub.Stats) bool { return st.Counters.Acked == n && st.Pending == 0 })

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
