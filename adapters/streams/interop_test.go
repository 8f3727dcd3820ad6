package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Interop with watermill-redisstream v1.4.5, the real library, on one Redis: a backend in
// FormatWatermill reads and writes the streams that library does.

// interopEnv is a FormatWatermill backend and a way to make watermill-redisstream clients
// (whose Close closes the client they are given, so each gets one of its own).
type interopEnv struct {
	server *redistest.Server
	b      *streams.Backend
	topic  string
}

func newInteropEnv(t *testing.T) *interopEnv {
	t.Helper()
	server := redistest.Shared(t)
	prefix := redistest.Prefix(t)
	b, err := streams.New(server.Client(t), streams.Options{Prefix: prefix, Format: streams.FormatWatermill})
	require.NoError(t, err)
	// The stream is the bare topic: unique per test.
	return &interopEnv{server: server, b: b, topic: "interop-" + prefix}
}

func (e *interopEnv) client(t *testing.T) *redis.Client { return e.server.Client(t) }

func (e *interopEnv) relqSubscriber(t *testing.T, group string) *pubsub.Subscriber {
	t.Helper()
	sub, err := pubsub.NewSubscriber(e.b, pubsub.SubscriberConfig{
		Group: group, Lease: 500 * time.Millisecond, Block: 100 * time.Millisecond, CloseTimeout: time.Second,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sub.Close()) })
	return sub
}

func (e *interopEnv) wmSubscriber(t *testing.T, group, consumer string) *redisstream.Subscriber {
	t.Helper()
	sub, err := redisstream.NewSubscriber(redisstream.SubscriberConfig{
		Client:                        e.client(t),
		ConsumerGroup:                 group,
		Consumer:                      consumer,
		BlockTime:                     50 * time.Millisecond,
		DisableIndefiniteInitialBlock: true, // a blocking read without timeout would outlive the test
	}, watermill.NopLogger{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

func wmMessage(payload string, metadata map[string]string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
	for k, v := range metadata {
		msg.Metadata.Set(k, v)
	}
	return msg
}

func receiveWithin(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case msg, ok := <-ch:
		require.True(t, ok, "the subscription channel was closed")
		return msg
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no message received")
		return nil
	}
}

// A message published by watermill-redisstream's Publisher is consumed by relq's Subscriber,
// UUID, metadata and payload intact, its delivery ID the entry ID.
func TestInteropWatermillPublishesRelqConsumes(t *testing.T) {
	t.Parallel()
	e := newInteropEnv(t)
	ctx := context.Background()
	sub := e.relqSubscriber(t, "relq-workers")
	require.NoError(t, sub.SubscribeInitialize(e.topic))
	ch, err := sub.Subscribe(ctx, e.topic)
	require.NoError(t, err)

	pub, err := redisstream.NewPublisher(redisstream.PublisherConfig{Client: e.client(t)}, watermill.NopLogger{})
	require.NoError(t, err)
	defer pub.Close()
	sent := []*message.Message{
		wmMessage("with metadata", map[string]string{"trace-id": "abc-123", "empty": "", "long": string(make([]byte, 300))}),
		wmMessage("", nil),
		wmMessage("\x00\xffbinary", map[string]string{"unicode": "zażółć ✓"}),
	}
	require.NoError(t, pub.Publish(e.topic, sent...))

	entries, err := e.client(t).XRange(ctx, e.topic, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, len(sent))
	for i, want := range sent {
		got := receiveWithin(t, ch)
		require.Equal(t, want.UUID, got.UUID)
		require.Equal(t, string(want.Payload), string(got.Payload))
		for k, v := range want.Metadata {
			require.Equal(t, v, got.Metadata.Get(k), "metadata %q", k)
		}
		require.Equal(t, entries[i].ID, pubsub.DeliveryID(got))
		require.Equal(t, 1, pubsub.Attempt(got))
		require.True(t, got.Ack())
	}
	require.Eventually(t, func() bool {
		s, err := e.b.Stats(ctx, &backend.StatsParams{Topic: e.topic, Group: "relq-workers"})
		return err == nil && s.Ready == 0 && s.Pending == 0 && s.Counters.Acked == int64(len(sent))
	}, 10*time.Second, 10*time.Millisecond)
}

// A message published by relq is consumed by watermill-redisstream's Subscriber with its
// consumer group, which acks it in Redis.
func TestInteropRelqPublishesWatermillConsumes(t *testing.T) {
	t.Parallel()
	e := newInteropEnv(t)
	ctx := context.Background()
	wm := e.wmSubscriber(t, "wm-workers", "wm-1")
	ch, err := wm.Subscribe(ctx, e.topic) // creates the group, from the oldest entry
	require.NoError(t, err)

	pub, err := pubsub.NewPublisher(e.b, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	sent := []*message.Message{
		wmMessage("with metadata", map[string]string{"trace-id": "abc-123", "empty": ""}),
		wmMessage("", nil),
	}
	require.NoError(t, pub.Publish(e.topic, sent...))

	for _, want := range sent {
		got := receiveWithin(t, ch)
		require.Equal(t, want.UUID, got.UUID)
		require.Equal(t, string(want.Payload), string(got.Payload))
		require.Equal(t, map[string]string(want.Metadata), map[string]string(got.Metadata))
		require.True(t, got.Ack())
	}
	require.Eventually(t, func() bool {
		p, err := e.client(t).XPending(ctx, e.topic, "wm-workers").Result()
		return err == nil && p.Count == 0
	}, 10*time.Second, 10*time.Millisecond, "watermill-redisstream did not ack")
	groups, err := e.b.GroupNames(ctx, e.topic)
	require.NoError(t, err)
	require.Equal(t, []string{"wm-workers"}, groups, "relq published into the existing group, without adding its default one")
}

// Switching a consumer group from watermill-redisstream to relq without draining: relq
// subscribers join the group the old ones used and take over what is left, including what an
// old consumer read and never acked (judged by the subscriber's lease, since relq has no
// record of that consumer), as its next attempt.
func TestInteropMigrationWithoutDraining(t *testing.T) {
	t.Parallel()
	e := newInteropEnv(t)
	ctx := context.Background()
	const group = "orders"
	wm := e.wmSubscriber(t, group, "old-1")
	wmCh, err := wm.Subscribe(ctx, e.topic)
	require.NoError(t, err)

	wmPub, err := redisstream.NewPublisher(redisstream.PublisherConfig{Client: e.client(t)}, watermill.NopLogger{})
	require.NoError(t, err)
	defer wmPub.Close()
	var sent []*message.Message
	for i := range 10 {
		sent = append(sent, wmMessage("msg-"+string(rune('a'+i)), map[string]string{"n": string(rune('a' + i))}))
	}
	require.NoError(t, wmPub.Publish(e.topic, sent...))

	// The old consumer handles two messages and crashes on the third (read, never acked); it
	// may have read one more ahead, which it never delivered.
	for range 2 {
		require.True(t, receiveWithin(t, wmCh).Ack())
	}
	receiveWithin(t, wmCh)
	require.NoError(t, wm.Close())
	left, err := e.client(t).XPendingExt(ctx, &redis.XPendingExtArgs{Stream: e.topic, Group: group, Start: "-", End: "+", Count: 100}).Result()
	require.NoError(t, err)
	require.NotEmpty(t, left, "the old consumer left nothing pending")
	readBefore := map[string]bool{}
	for _, p := range left {
		readBefore[p.ID] = true
	}

	sub := e.relqSubscriber(t, group)
	ch, err := sub.Subscribe(ctx, e.topic)
	require.NoError(t, err)
	got := map[string]int{} // UUID -> attempt
	for range len(sent) - 2 {
		msg := receiveWithin(t, ch)
		want := 1
		if readBefore[pubsub.DeliveryID(msg)] {
			want = 2 // the old consumer's read was an attempt
		}
		require.Equal(t, want, pubsub.Attempt(msg), "attempt of %s", pubsub.DeliveryID(msg))
		got[msg.UUID] = pubsub.Attempt(msg)
		require.True(t, msg.Ack())
	}
	for i, m := range sent[2:] {
		require.Contains(t, got, m.UUID, "message %d not taken over", i+2)
	}
	require.Eventually(t, func() bool {
		s, err := e.b.Stats(ctx, &backend.StatsParams{Topic: e.topic, Group: group})
		return err == nil && s.Ready == 0 && s.Pending == 0 && s.Delayed == 0
	}, 10*time.Second, 10*time.Millisecond)
}

// While old and new consumers share a group, watermill-redisstream's claim loop takes pending
// entries idle past its MaxIdleTime, relq's parked retries included, unless told to leave the
// parking consumer's entries alone, as docs/streams-backend.md advises.
func TestInteropOldConsumersLeaveParkedRetriesAloneWhenTold(t *testing.T) {
	t.Parallel()
	for _, filter := range []bool{false, true} {
		t.Run(map[bool]string{false: "unfiltered", true: "filtered"}[filter], func(t *testing.T) {
			t.Parallel()
			e := newInteropEnv(t)
			ctx := context.Background()
			const group = "shared"
			require.NoError(t, e.b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: e.topic, Group: group}))
			_, err := e.b.Publish(ctx, &backend.PublishParams{Topic: e.topic, Messages: []backend.OutMessage{
				{Envelope: backend.Envelope{UUID: "retry-later", Payload: []byte("x")}},
			}})
			require.NoError(t, err)
			ds, err := e.b.Claim(ctx, &backend.ClaimParams{Topic: e.topic, Group: group, Consumer: "new-1", Count: 1, Lease: time.Minute})
			require.NoError(t, err)
			_, err = e.b.Nack(ctx, &backend.NackParams{Topic: e.topic, Group: group, Consumer: "new-1",
				Items: []backend.NackItem{{ID: ds[0].ID, Attempt: 1, Delay: time.Hour}}})
			require.NoError(t, err)

			cfg := redisstream.SubscriberConfig{
				Client: e.client(t), ConsumerGroup: group, Consumer: "old-1",
				BlockTime: 20 * time.Millisecond, ClaimInterval: 20 * time.Millisecond, MaxIdleTime: 50 * time.Millisecond,
				DisableIndefiniteInitialBlock: true,
			}
			if filter {
				cfg.ShouldClaimPendingMessage = func(p redis.XPendingExt) bool { return p.Consumer != streams.ParkedConsumer }
			}
			old, err := redisstream.NewSubscriber(cfg, watermill.NopLogger{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = old.Close() })
			ch, err := old.Subscribe(ctx, e.topic)
			require.NoError(t, err)

			if !filter {
				msg := receiveWithin(t, ch) // its claim loop takes the parked retry, idle past MaxIdleTime
				require.Equal(t, "retry-later", msg.UUID)
				msg.Ack()
				return
			}
			// Over twenty claim intervals past MaxIdleTime, in which the unfiltered loop takes it
			// on an idle machine (a loaded one can only make this check pass more easily).
			select {
			case msg := <-ch:
				require.Fail(t, "the old consumer took a parked retry despite the filter", "uuid %s", msg.UUID)
			case <-time.After(500 * time.Millisecond):
			}
		})
	}
}
