package pubsub_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func TestSubscribeValidationAndClose(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{})

	_, err := sub.Subscribe(context.Background(), "bad topic")
	require.ErrorIs(t, err, pubsub.ErrInvalidName)
	require.ErrorIs(t, sub.SubscribeInitialize("a*"), pubsub.ErrInvalidName)

	_, err = pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Group: "a:b"}, nil)
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)

	ch, err := sub.Subscribe(context.Background(), "t")
	require.NoError(t, err)
	require.NoError(t, sub.Close())
	require.NoError(t, sub.Close(), "Close is idempotent")
	requireClosed(t, ch)
	_, err = sub.Subscribe(context.Background(), "t")
	require.ErrorIs(t, err, pubsub.ErrClosed)
}

// Close must release prefetched messages at once — while a handler still runs — without
// counting an attempt, then wait for the handler, and leave nothing pending.
func TestCloseReleasesPrefetchedAtOnce(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	const topic = "prefetch"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{Concurrency: 1, Prefetch: 10})
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	publishN(t, pub, topic, 5)

	inFlight := receive(t, ch)
	eventually(t, b, topic, "all five claimed", func(st backend.Stats) bool { return st.Pending == 5 })

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = sub.Close()
	}()
	// The four prefetched come back while the handler of the fifth still runs.
	eventually(t, b, topic, "prefetched released", func(st backend.Stats) bool { return st.Ready == 4 && st.Pending == 1 })
	select {
	case <-inFlight.Context().Done():
	case <-time.After(waitFor):
		t.Fatal("Close did not cancel the context of the message in flight")
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a handler was still running")
	default:
	}
	require.True(t, inFlight.Ack())
	select {
	case <-closed:
	case <-time.After(waitFor):
		t.Fatal("Close did not return after the last handler acked")
	}
	requireClosed(t, ch)
	st := stats(t, b, topic)
	require.Equal(t, int64(4), st.Ready)
	require.Zero(t, st.Pending)
	require.Equal(t, int64(1), st.Counters.Acked)

	// Released messages come back as first attempts.
	sub2 := newSubscriber(t, b, pubsub.SubscriberConfig{})
	ch2, err := sub2.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	for range 4 {
		m := receive(t, ch2)
		require.Equal(t, 1, pubsub.Attempt(m), "a released message counted an attempt")
		m.Ack()
	}
	eventually(t, b, topic, "all acked", func(st backend.Stats) bool { return st.Counters.Acked == 5 && st.Pending == 0 })
}

// Close must not wait for CloseTimeout when nobody reads the output channel: the message a
// worker is trying to send never reached a handler and is released like the prefetched ones.
func TestCloseWhileOutputUnread(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	const topic = "unread"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{Concurrency: 2, CloseTimeout: time.Hour})
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	publishN(t, pub, topic, 3)
	eventually(t, b, topic, "all claimed", func(st backend.Stats) bool { return st.Pending == 3 })

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = sub.Close()
	}()
	select {
	case <-closed:
	case <-time.After(waitFor):
		t.Fatal("Close blocked on an unread output channel")
	}
	_, open := <-ch
	require.False(t, open, "output channel not closed")
	st := stats(t, b, topic)
	require.Equal(t, int64(3), st.Ready, "%+v", st)
	require.Zero(t, st.Pending)
}

func TestContextCancelClosesChannel(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	const topic = "cancel"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	publishN(t, pub, topic, 3)

	m := receive(t, ch)
	require.True(t, m.Ack())
	cancel()
	requireClosed(t, ch) // acks whatever was still delivered
	eventually(t, b, topic, "nothing pending", func(st backend.Stats) bool {
		return st.Pending == 0 && st.Ready+st.Counters.Acked == 3
	})

	// The Subscriber itself stays usable.
	ch2, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	for range 3 - stats(t, b, topic).Counters.Acked {
		receive(t, ch2).Ack()
	}
	eventually(t, b, topic, "all acked", func(st backend.Stats) bool { return st.Counters.Acked == 3 && st.Pending == 0 })
}

func TestNackDelayAndMaxDeliveries(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	const topic = "nack"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{
		MaxDeliveries: 2,
		NackBackoff:   func(int) time.Duration { return 0 },
	})
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	publishN(t, pub, topic, 2)

	// A per-message delay set by the handler wins over the backoff.
	first := receive(t, ch)
	pubsub.SetNackDelay(first, time.Hour)
	require.True(t, first.Nack())
	eventually(t, b, topic, "nacked with delay", func(st backend.Stats) bool { return st.Delayed == 1 })

	// Without one the backoff (zero here) applies, and the second nack reaches MaxDeliveries.
	second := receive(t, ch)
	require.True(t, second.Nack())
	again := receive(t, ch)
	require.Equal(t, second.UUID, again.UUID)
	require.Equal(t, 2, pubsub.Attempt(again))
	require.True(t, again.Nack())
	st := eventually(t, b, topic, "dead-lettered", func(st backend.Stats) bool { return st.Dead == 1 })
	require.Equal(t, int64(1), st.Delayed)
	require.Zero(t, st.Pending)
}

// The heartbeat keeps the lease of a handler that runs longer than the lease. The handler
// holds its message until a heartbeat that began after the lease would have expired still
// kept it, so the heartbeat's own pace, not a fixed sleep, decides how long the test runs.
func TestHeartbeatKeepsLongHandlerLease(t *testing.T) {
	t.Parallel()
	const lease, interval = 2 * time.Second, 100 * time.Millisecond
	b := &heartbeats{Backend: newBackend(t)}
	pub := newPublisher(t, b)
	const topic = "slow"
	// A heartbeat can be lease - interval late before the lease expires: slack for a loaded
	// test machine.
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{
		Lease: lease, HeartbeatInterval: interval, ReclaimInterval: 100 * time.Millisecond,
	})
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	publishN(t, pub, topic, 1)
	m := receive(t, ch)
	received := time.Now() // claimed before this: its first lease ends before received + lease
	require.Eventually(t, func() bool { return b.keptAfter(received.Add(lease)) }, lease+waitFor, 10*time.Millisecond,
		"no heartbeat kept the lease after its first expiry")
	require.True(t, m.Ack())
	st := eventually(t, b, topic, "acked", func(st backend.Stats) bool { return st.Counters.Acked == 1 && st.Pending == 0 })
	gap := b.longestGap()
	require.Zero(t, st.Counters.Reclaimed, "the lease expired under a running handler (longest gap between heartbeats %v)", gap)
	require.Zero(t, st.Counters.StaleAcks)
	t.Logf("longest gap between heartbeats that kept the lease: %v (interval %v, lease %v)", gap, interval, lease)
}

// heartbeats is a backend that records when each Extend began that kept every lease it
// was asked to extend.
type heartbeats struct {
	backend.Backend
	mu   sync.Mutex
	kept []time.Time
}

func (b *heartbeats) Extend(ctx context.Context, p *backend.ExtendParams) ([]string, error) {
	began := time.Now()
	lost, err := b.Backend.Extend(ctx, p)
	if err == nil && len(lost) == 0 && len(p.Items) > 0 {
		b.mu.Lock()
		b.kept = append(b.kept, began)
		b.mu.Unlock()
	}
	return lost, err
}

// keptAfter reports whether an Extend that began after t kept every lease.
func (b *heartbeats) keptAfter(t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.kept) > 0 && b.kept[len(b.kept)-1].After(t)
}

// longestGap is the longest time between the starts of two Extends that kept every lease.
func (b *heartbeats) longestGap() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	var gap time.Duration
	for i := 1; i < len(b.kept); i++ {
		gap = max(gap, b.kept[i].Sub(b.kept[i-1]))
	}
	return gap
}

// A handler's reason travels with its last nack into the dead-letter store, cut to
// MaxNackReason; an earlier nack's reason is not kept.
func TestNackReasonIsKeptWithTheDeadLetter(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	const topic = "reason"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{
		MaxDeliveries: 2,
		NackBackoff:   func(int) time.Duration { return 0 },
	})
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	publishN(t, pub, topic, 1)

	first := receive(t, ch)
	pubsub.SetNackReason(first, "first failure")
	require.True(t, first.Nack())
	again := receive(t, ch)
	require.Empty(t, again.Metadata.Get(pubsub.MetadataNackReason), "a reason belongs to one delivery")
	pubsub.SetNackReason(again, strings.Repeat("x", pubsub.MaxNackReason+10))
	require.True(t, again.Nack())
	eventually(t, b, topic, "dead-lettered", func(st backend.Stats) bool { return st.Dead == 1 })
	dl, err := b.DeadLetters(context.Background(), &backend.DeadLettersParams{Topic: topic, Group: pubsub.DefaultGroup, Count: 10})
	require.NoError(t, err)
	require.Len(t, dl, 1)
	require.Equal(t, strings.Repeat("x", pubsub.MaxNackReason), dl[0].Reason)
}
