package pubsub_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// lostReleaseReply wraps a backend: its first Nack that releases runs, then waits for hold
// to be closed, then reports an error as if the reply had been lost, so the acker retries it.
type lostReleaseReply struct {
	backend.Backend
	released chan struct{} // closed once the first release ran
	hold     chan struct{}
	once     sync.Once
}

func (l *lostReleaseReply) Nack(ctx context.Context, p *backend.NackParams) (backend.NackResult, error) {
	res, err := l.Backend.Nack(ctx, p)
	first := false
	for _, it := range p.Items {
		if it.Release {
			l.once.Do(func() { first = true })
		}
	}
	if !first || err != nil {
		return res, err
	}
	close(l.released)
	<-l.hold
	return backend.NackResult{}, errors.New("reply lost")
}

// A release whose reply was lost is retried; by then another subscription of the same
// Subscriber may have claimed the released message. The retry must not release that claim:
// each subscription fences its deliveries under a name of its own, so the retried release is
// stale, and the message is claimed once more, not twice.
func TestRetriedReleaseDoesNotReleaseAnotherSubscriptionsClaim(t *testing.T) {
	t.Parallel()
	inner := newBackend(t)
	b := &lostReleaseReply{Backend: inner, released: make(chan struct{}), hold: make(chan struct{})}
	pub := newPublisher(t, inner)
	const topic = "release-retry"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{Prefetch: -1})

	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	_, err := sub.Subscribe(ctx1, topic) // never read: its one message is released at the stop
	require.NoError(t, err)
	publishN(t, pub, topic, 1)
	eventually(t, inner, topic, "claimed by the first subscription", func(st backend.Stats) bool { return st.Pending == 1 })

	ch2, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	cancel1()
	<-b.released
	got := receive(t, ch2) // the second subscription holds it now, attempt 1 again
	require.Equal(t, 1, pubsub.Attempt(got))
	close(b.hold) // the release's retry goes out while the second subscription holds it

	eventually(t, inner, topic, "the retried release counted stale", func(st backend.Stats) bool {
		return st.Counters.StaleNacks == 1
	})
	require.True(t, got.Ack())
	st := eventually(t, inner, topic, "acked", func(st backend.Stats) bool {
		return st.Counters.Acked == 1 && st.Pending == 0 && st.Ready == 0
	})
	require.Equal(t, int64(2), st.Counters.Claimed, "the retried release took the message from its new holder")
	require.Zero(t, st.Counters.StaleAcks)
}
