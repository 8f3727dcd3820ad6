package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/delay"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

func TestPublishRejectsBadBatchesAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{MaxMessageBytes: 1024}, nil)
	require.NoError(t, err)
	const topic = "orders"

	good := func() *message.Message { return message.NewMessage(watermill.NewUUID(), []byte("ok")) }
	withMeta := func(k, v string) *message.Message {
		m := good()
		m.Metadata.Set(k, v)
		return m
	}
	cases := []struct {
		name   string
		topic  string
		bad    *message.Message
		target error
		check  func(t *testing.T, err error)
	}{
		{name: "nil message", topic: topic, bad: nil, target: pubsub.ErrNilMessage},
		{name: "invalid topic", topic: "a{b}", bad: good(), target: pubsub.ErrInvalidName},
		{name: "empty topic", topic: "", bad: good(), target: pubsub.ErrInvalidName},
		{name: "unknown reserved key", topic: topic, bad: withMeta("_relq_typo", "1"), target: pubsub.ErrReservedMetadata,
			check: func(t *testing.T, err error) {
				var me *pubsub.MetadataError
				require.ErrorAs(t, err, &me)
				require.Equal(t, "_relq_typo", me.Key)
			}},
		{name: "bad delay", topic: topic, bad: withMeta(pubsub.MetadataDelayMs, "soon"), target: pubsub.ErrReservedMetadata},
		{name: "bad priority", topic: topic, bad: withMeta(pubsub.MetadataPriority, "high"), target: pubsub.ErrReservedMetadata},
		{name: "bad watermill until", topic: topic, bad: withMeta(pubsub.WatermillDelayedUntil, "tomorrow"), target: pubsub.ErrReservedMetadata},
		{name: "bad watermill for", topic: topic, bad: withMeta(pubsub.WatermillDelayedFor, "a while"), target: pubsub.ErrReservedMetadata},
		{name: "too large", topic: topic, bad: message.NewMessage(watermill.NewUUID(), make([]byte, 1024)), target: pubsub.ErrMessageTooLarge,
			check: func(t *testing.T, err error) {
				var se *pubsub.SizeError
				require.ErrorAs(t, err, &se)
				require.Equal(t, 1024, se.Limit)
				require.Greater(t, se.Size, 1024)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The bad message comes last: the good ones before it must not be stored either.
			err := pub.Publish(tc.topic, good(), good(), tc.bad)
			require.ErrorIs(t, err, tc.target)
			if tc.check != nil {
				tc.check(t, err)
			}
		})
	}
	st := stats(t, b, topic)
	require.Zero(t, st.Counters.Published, "a rejected batch stored messages: %+v", st)
	require.Zero(t, st.Ready+st.Delayed)

	require.NoError(t, pub.Close())
	require.NoError(t, pub.Close(), "Close is idempotent")
	require.ErrorIs(t, pub.Publish(topic, good()), pubsub.ErrClosed)
}

func TestPublishBatchAndControlMetadata(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{})
	const topic = "control"
	require.NoError(t, sub.SubscribeInitialize(topic))

	msg := message.NewMessage(watermill.NewUUID(), []byte("x"))
	msg.Metadata.Set("user", "kept")
	pubsub.SetDelay(msg, 0)
	pubsub.SetPriority(msg, 5)
	require.NoError(t, pub.Publish(topic, msg, message.NewMessage(watermill.NewUUID(), nil)))
	require.Equal(t, int64(2), stats(t, b, topic).Counters.Published)
	require.Equal(t, "0", msg.Metadata.Get(pubsub.MetadataDelayMs), "Publish must not change the caller's message")

	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	got := receive(t, ch)
	require.Equal(t, msg.UUID, got.UUID)
	require.Equal(t, "kept", got.Metadata.Get("user"))
	require.Empty(t, got.Metadata.Get(pubsub.MetadataDelayMs), "control keys are not stored")
	require.Empty(t, got.Metadata.Get(pubsub.MetadataPriority), "control keys are not stored")
	require.Equal(t, topic, got.Metadata.Get(pubsub.MetadataTopic))
	require.Equal(t, pubsub.DefaultGroup, got.Metadata.Get(pubsub.MetadataGroup))
	require.Equal(t, 1, pubsub.Attempt(got))
	require.NotEmpty(t, pubsub.DeliveryID(got))
	got.Ack()
	receive(t, ch).Ack()
}

func TestForwardingAReceivedMessage(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{})
	ctx := context.Background()
	require.NoError(t, sub.SubscribeInitialize("out"))

	in, err := sub.Subscribe(ctx, "in")
	require.NoError(t, err)
	original := message.NewMessage(watermill.NewUUID(), []byte("forward me"))
	original.Metadata.Set("trace", "abc")
	require.NoError(t, pub.Publish("in", original))

	got := receive(t, in)
	pubsub.SetNackDelay(got, time.Hour) // set by a handler; must not travel either
	require.NoError(t, pub.Publish("out", got), "a received message carries delivery keys, which Publish drops")
	require.True(t, got.Ack())

	out, err := sub.Subscribe(ctx, "out")
	require.NoError(t, err)
	fwd := receive(t, out)
	require.Equal(t, original.UUID, fwd.UUID)
	require.Equal(t, "forward me", string(fwd.Payload))
	require.Equal(t, "abc", fwd.Metadata.Get("trace"))
	require.Equal(t, "out", fwd.Metadata.Get(pubsub.MetadataTopic))
	require.Equal(t, 1, pubsub.Attempt(fwd))
	require.Empty(t, fwd.Metadata.Get(pubsub.MetadataNackDelayMs))
	require.True(t, fwd.Ack())
	eventually(t, b, "out", "forwarded message acked", func(st backend.Stats) bool { return st.Counters.Acked == 1 && st.Pending == 0 })
}

func TestWatermillDelayMetadata(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	pub := newPublisher(t, b)
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{})
	const topic = "delayed"
	require.NoError(t, sub.SubscribeInitialize(topic))

	// delay.For: due in 1.5s, though its until key has whole seconds only.
	later := message.NewMessage(watermill.NewUUID(), []byte("later"))
	delay.Message(later, delay.For(1500*time.Millisecond))
	// delay.Until in the past (a message published long after its delay was set): due now.
	past := message.NewMessage(watermill.NewUUID(), []byte("past"))
	delay.Message(past, delay.Until(time.Now().Add(-time.Minute)))
	// relq's own helper wins over Watermill's keys.
	now := message.NewMessage(watermill.NewUUID(), []byte("now"))
	delay.Message(now, delay.For(time.Hour))
	pubsub.SetDelay(now, 0)

	published := time.Now()
	require.NoError(t, pub.Publish(topic, later, past, now))
	st := stats(t, b, topic)
	require.Equal(t, int64(1), st.Delayed, "%+v", st)
	require.Equal(t, int64(2), st.Ready, "%+v", st)

	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	seen := map[string]time.Time{}
	for range 3 {
		m := receive(t, ch)
		seen[string(m.Payload)] = time.Now()
		require.NotEmpty(t, m.Metadata.Get(delay.DelayedForKey), "Watermill's keys are the user's and stay")
		m.Ack()
	}
	require.Contains(t, seen, "past")
	require.Contains(t, seen, "now")
	require.GreaterOrEqual(t, seen["later"].Sub(published), time.Second, "delivered before its delay")
}

// noReplicas hides every method of a backend beyond backend.Backend, as a backend that cannot
// wait for replicas (one of your own, say) has none.
type noReplicas struct{ backend.Backend }

// WaitReplicas on a backend that cannot wait is a configuration error naming the field and
// the backend, not a Publish that silently skips the wait.
func TestPublisherWaitReplicasNeedsSupport(t *testing.T) {
	t.Parallel()
	var b backend.Backend = noReplicas{newBackend(t)}
	_, ok := b.(backend.ReplicaWaiter)
	require.False(t, ok)
	_, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{WaitReplicas: 1}, nil)
	var ce *pubsub.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "WaitReplicas", ce.Field)
	require.True(t, errors.Is(err, pubsub.ErrInvalidConfig))
	require.True(t, strings.Contains(err.Error(), b.Name()))
}

// waitingBackend adds ReplicaWaiter to a backend with a plain WAIT on the test server, which
// has no replicas: what it reports decides Publish's result.
type waitingBackend struct {
	backend.Backend
	client *redis.Client
}

func (w waitingBackend) WaitReplicas(ctx context.Context, _ string, n int, timeout time.Duration) (int, error) {
	got, err := w.client.Do(ctx, "WAIT", n, timeout.Milliseconds()).Int()
	return got, err
}

func TestPublisherWaitReplicas(t *testing.T) {
	t.Parallel()
	client := redistest.Shared(t).Client(t)
	inner, err := list.New(client, list.Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	b := waitingBackend{Backend: inner, client: client}
	require.NoError(t, b.EnsureGroup(context.Background(), &backend.EnsureGroupParams{Topic: "t", Group: pubsub.DefaultGroup}))
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond}, nil)
	require.NoError(t, err)

	err = pub.Publish("t", message.NewMessage(watermill.NewUUID(), nil))
	require.ErrorIs(t, err, pubsub.ErrNotReplicated)
	require.Equal(t, int64(1), stats(t, b, "t").Counters.Published, "the message is stored on the primary all the same")
}

// Concurrent Publish calls on one topic share round trips (the group commit) on a real
// backend too: every message is stored exactly once, and each call's messages are delivered
// contiguous and in order (the list backend is FIFO with one consumer).
func TestConcurrentPublishStoresEveryMessageOnceInCallOrder(t *testing.T) {
	t.Parallel()
	const goroutines, callsEach, per = 10, 20, 3
	b := newBackend(t)
	pub := newPublisher(t, b)
	sub := newSubscriber(t, b, pubsub.SubscriberConfig{Prefetch: 100})
	const topic = "commit"
	require.NoError(t, sub.SubscribeInitialize(topic))

	var wg sync.WaitGroup
	errs := make(chan error, goroutines*callsEach)
	for g := range goroutines {
		wg.Go(func() {
			for c := range callsEach {
				msgs := make([]*message.Message, per)
				for i := range msgs {
					msgs[i] = message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "%d/%d/%d", g, c, i))
				}
				errs <- pub.Publish(topic, msgs...)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	const total = goroutines * callsEach * per
	require.Equal(t, int64(total), stats(t, b, topic).Counters.Published)

	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	seen := map[string]bool{}
	next := map[int]int{} // goroutine -> its next call
	for n := 0; n < total; n += per {
		var g0, c0 int
		for j := range per {
			m := receive(t, ch)
			var g, c, i int
			_, err := fmt.Sscanf(string(m.Payload), "%d/%d/%d", &g, &c, &i)
			require.NoError(t, err)
			require.False(t, seen[string(m.Payload)], "%s delivered twice", m.Payload)
			seen[string(m.Payload)] = true
			if j == 0 {
				require.Equal(t, next[g], c, "the calls of one goroutine are in call order: got %s", m.Payload)
				next[g]++
				g0, c0 = g, c
			}
			require.Equal(t, fmt.Sprintf("%d/%d/%d", g0, c0, j), string(m.Payload),
				"the messages of a call are contiguous and in order")
			require.True(t, m.Ack())
		}
	}
	require.Len(t, seen, total)
}
