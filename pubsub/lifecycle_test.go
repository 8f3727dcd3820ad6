package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// The Subscriber's side of group lifecycles: joining, renewing and leaving ephemeral groups,
// and stopping when the group is deleted. The backends' side (what Join, Leave and a deleted
// group do in Redis) is conformance's; here a recording backend over the list backend stands
// for it, whose Join registers the group with EnsureGroup and whose Leave only records.

// lifecycle is a list backend that implements backend.Ephemeral by recording calls, and can
// act as if its group were deleted: Claim and renewals then fail with ErrGroupDeleted.
type lifecycle struct {
	backend.Backend
	deleted atomic.Bool

	mu     sync.Mutex
	events []string // "join <consumer>", "renew <consumer>", "leave <consumer>", "ack", "release", "register"
}

func (b *lifecycle) record(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, fmt.Sprintf(format, args...))
}

// recorded returns the events so far, with the subscription's consumer name (worker.<suffix>)
// written as "sub".
func (b *lifecycle) recorded() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, len(b.events))
	for i, e := range b.events {
		if verb, name, ok := strings.Cut(e, " "); ok && strings.HasPrefix(name, "worker.") {
			e = verb + " sub"
		}
		out[i] = e
	}
	return out
}

func (b *lifecycle) count(event string) int {
	n := 0
	for _, e := range b.recorded() {
		if e == event {
			n++
		}
	}
	return n
}

func (b *lifecycle) Join(ctx context.Context, p *backend.JoinParams) error {
	if p.Renew {
		if b.deleted.Load() {
			return fmt.Errorf("renew: %w", pubsub.ErrGroupDeleted)
		}
		b.record("renew %s", p.Consumer)
		return nil
	}
	b.record("join %s", p.Consumer)
	return b.Backend.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: p.Topic, Group: p.Group})
}

func (b *lifecycle) Leave(_ context.Context, p *backend.LeaveParams) error {
	b.record("leave %s", p.Consumer)
	return nil
}

func (b *lifecycle) EnsureGroup(ctx context.Context, p *backend.EnsureGroupParams) error {
	b.record("register")
	return b.Backend.EnsureGroup(ctx, p)
}

func (b *lifecycle) Claim(ctx context.Context, p *backend.ClaimParams) ([]backend.Delivery, error) {
	if b.deleted.Load() {
		return nil, fmt.Errorf("claim: %w", pubsub.ErrGroupDeleted)
	}
	return b.Backend.Claim(ctx, p)
}

func (b *lifecycle) Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error) {
	b.record("ack")
	return b.Backend.Ack(ctx, p)
}

func (b *lifecycle) Nack(ctx context.Context, p *backend.NackParams) (backend.NackResult, error) {
	for _, it := range p.Items {
		if it.Release {
			b.record("release")
		}
	}
	return b.Backend.Nack(ctx, p)
}

var _ backend.Ephemeral = (*lifecycle)(nil)

func TestEphemeralConfig(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	for field, c := range map[string]pubsub.SubscriberConfig{
		"EphemeralTTL": {EphemeralTTL: time.Second},
		"FromOldest":   {Ephemeral: true, FromOldest: true},
	} {
		_, err := pubsub.NewSubscriber(&lifecycle{Backend: b}, c, nil)
		var ce *pubsub.ConfigError
		require.ErrorAs(t, err, &ce, field)
		require.Equal(t, field, ce.Field)
	}
	_, err := pubsub.NewSubscriber(&lifecycle{Backend: b}, pubsub.SubscriberConfig{Ephemeral: true, EphemeralTTL: 10 * time.Millisecond}, nil)
	require.ErrorContains(t, err, "EphemeralTTL must be at least 30ms")

	// A backend without Join and Leave cannot keep an ephemeral group.
	_, err = pubsub.NewSubscriber(struct{ backend.Backend }{b}, pubsub.SubscriberConfig{Ephemeral: true}, nil)
	var ce *pubsub.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Ephemeral", ce.Field)
	require.ErrorContains(t, err, "does not keep ephemeral groups")

	require.Equal(t, pubsub.EphemeralTTLDefault, pubsub.SubscriberConfig{Ephemeral: true}.WithDefaults().EphemeralTTL)
	require.Zero(t, pubsub.SubscriberConfig{}.WithDefaults().EphemeralTTL)
}

// A subscription of an ephemeral group joins as a member of its own, renews its membership
// while it runs, and leaves once it has stopped: after its releases and acks were sent, and
// with no renewal after the leave (it would join again).
func TestEphemeralSubscriptionJoinsRenewsAndLeaves(t *testing.T) {
	t.Parallel()
	b := &lifecycle{Backend: newBackend(t)}
	pub := newPublisher(t, b)
	const topic = "replies"
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{
		Consumer: "worker", Ephemeral: true, EphemeralTTL: 90 * time.Millisecond,
		Block: 50 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	require.Equal(t, []string{"join sub"}, b.recorded(), "Subscribe joins, under the subscription's own name, and does not register")

	publishN(t, pub, topic, 3)
	held := receive(t, ch)
	eventually(t, b, topic, "all three claimed", func(st backend.Stats) bool { return st.Pending == 3 })
	require.Eventually(t, func() bool { return b.count("renew sub") >= 3 }, waitFor, time.Millisecond,
		"the membership is renewed every EphemeralTTL/3")

	cancel()
	<-held.Context().Done()
	require.True(t, held.Ack())
	// The leave comes after every worker returned: nothing more is delivered.
	require.Eventually(t, func() bool { return b.count("leave sub") == 1 }, waitFor, time.Millisecond)
	requireClosed(t, ch)

	events := b.recorded()
	require.Equal(t, "leave sub", events[len(events)-1], "no call after the leave: %v", events)
	require.Equal(t, 1, b.count("ack"), "the ack sent before the leave: %v", events)
	// A release can be claimed again by the claim in progress (list's BLMOVE runs to its
	// timeout), and released again.
	require.GreaterOrEqual(t, b.count("release"), 2, "the two prefetched released before the leave: %v", events)
	st := stats(t, b, topic)
	require.Equal(t, int64(2), st.Ready)
	require.Zero(t, st.Pending)
	require.Zero(t, b.count("register"), "an ephemeral group is never registered with EnsureGroup")
}

// SubscribeInitialize joins under the configured consumer name, which holds the group until
// the first Subscribe of the topic has joined; that Subscribe then leaves it, and Close leaves
// those no Subscribe took over.
func TestSubscribeInitializeEphemeral(t *testing.T) {
	t.Parallel()
	b := &lifecycle{Backend: newBackend(t)}
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Consumer: "worker", Ephemeral: true, Block: 20 * time.Millisecond}, nil)
	require.NoError(t, err)

	require.NoError(t, sub.SubscribeInitialize("a"))
	require.NoError(t, sub.SubscribeInitialize("b"))
	require.Equal(t, []string{"join worker", "join worker"}, b.recorded())
	_, err = sub.Subscribe(context.Background(), "a")
	require.NoError(t, err)
	require.Equal(t, []string{"join worker", "join worker", "join sub", "leave worker"}, b.recorded(),
		"the subscription joined before the initial membership left")

	require.NoError(t, sub.Close())
	events := b.recorded()[4:]
	slices.Sort(events)
	require.Equal(t, []string{"leave sub", "leave worker"}, events, "Close leaves b's initial membership and a's subscription")
}

// A subscription whose group was deleted (its Claim fails with ErrGroupDeleted) logs it
// once, stops as if cancelled (message contexts cancelled, prefetched released, the handler
// in flight still acks) and closes its channel, and never registers the group again.
func TestDeletedGroupStopsTheSubscription(t *testing.T) {
	t.Parallel()
	b := &lifecycle{Backend: newBackend(t)}
	pub := newPublisher(t, b)
	const topic = "deleted"
	logger := watermill.NewCaptureLogger()
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{
		Block: 20 * time.Millisecond, ReclaimInterval: 20 * time.Millisecond, Lease: time.Second,
	}, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	ctx := context.Background()
	ch, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	publishN(t, pub, topic, 3)
	held := receive(t, ch)
	eventually(t, b, topic, "all three claimed", func(st backend.Stats) bool { return st.Pending == 3 })

	b.deleted.Store(true)
	select {
	case <-held.Context().Done():
	case <-time.After(waitFor):
		t.Fatal("the message in flight was not told of the stop")
	}
	require.True(t, held.Ack())
	requireClosed(t, ch)
	require.NoError(t, ctx.Err())
	require.NoError(t, sub.Close())

	require.Equal(t, 1, b.count("register"), "the group was registered again")
	require.Equal(t, 2, b.count("release"))
	var logged []watermill.CapturedMessage
	for _, m := range logger.Captured()[watermill.ErrorLogLevel] {
		if errors.Is(m.Err, pubsub.ErrGroupDeleted) {
			logged = append(logged, m)
		}
	}
	require.Len(t, logged, 1, "logged once, at error level")
	require.Contains(t, logged[0].Msg, "group was deleted")
}

// An ephemeral subscription whose renewal finds the group deleted stops the same way, and
// does not leave a group that is gone.
func TestEphemeralRenewalOfADeletedGroupStops(t *testing.T) {
	t.Parallel()
	// On zset, whose blocked claim ends when the stop cancels it.
	z, err := zset.New(redistest.Shared(t).Client(t), zset.Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	b := &lifecycle{Backend: z}
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{
		Consumer: "worker", Ephemeral: true, EphemeralTTL: 60 * time.Millisecond,
		Block: time.Hour, // the claim never sees the deletion: the renewal does
	})
	ch, err := sub.Subscribe(context.Background(), "renewed")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.count("renew sub") >= 1 }, waitFor, time.Millisecond)
	b.deleted.Store(true)
	requireClosed(t, ch)
	require.Zero(t, b.count("leave sub"))
}

// Messages carry their subscriber's MaxDeliveries, for middleware: see middleware.Backoff.
func TestMaxDeliveriesOf(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	for _, tc := range []struct{ config, want int }{{3, 3}, {0, pubsub.MaxDeliveriesDefault}, {-1, 0}} {
		topic := fmt.Sprintf("limit%d", tc.config)
		sub := newSubscriber(t, b, pubsub.SubscriberConfig{MaxDeliveries: tc.config, Block: 20 * time.Millisecond})
		ch, err := sub.Subscribe(context.Background(), topic)
		require.NoError(t, err)
		publishN(t, pub, topic, 1)
		msg := receive(t, ch)
		limit, ok := pubsub.MaxDeliveriesOf(msg)
		require.True(t, ok)
		require.Equal(t, tc.want, limit, "MaxDeliveries %d", tc.config)
		require.True(t, msg.Ack())
	}
	_, ok := pubsub.MaxDeliveriesOf(message.NewMessage("1", nil))
	require.False(t, ok, "a message that no Subscriber delivered")
}
