package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

const (
	// waitTimeout bounds every wait for something that must happen; it is generous because
	// the suite runs under -race on small machines, and only a failing test waits that long.
	waitTimeout = 15 * time.Second
	tick        = 10 * time.Millisecond

	// Short timings keep the suite fast; tests that depend on one set it explicitly.
	shortLease = time.Second
	shortBlock = 100 * time.Millisecond
	shortNack  = 50 * time.Millisecond

	// clockSlack absorbs the millisecond rounding between the Redis clock, which sets due
	// times and lease deadlines, and the Go clock that measures them.
	clockSlack = 5 * time.Millisecond
)

// logger is silent unless RELQ_TEST_LOG is set, to keep the output of failing tests readable.
var logger watermill.LoggerAdapter = func() watermill.LoggerAdapter {
	if os.Getenv("RELQ_TEST_LOG") != "" {
		return watermill.NewStdLogger(true, false)
	}
	return watermill.NopLogger{}
}()

// topicName returns a topic no other test uses (the namespace is fresh anyway; a distinct
// name makes Redis keys easy to attribute when debugging).
func topicName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "topic-" + hex.EncodeToString(b[:])
}

// subscriberConfig fills the zero fields of cfg with the suite's short timings.
func subscriberConfig(cfg pubsub.SubscriberConfig) pubsub.SubscriberConfig {
	if cfg.Lease == 0 {
		cfg.Lease = shortLease
	}
	if cfg.Block == 0 {
		cfg.Block = shortBlock
	}
	if cfg.NackBackoff == nil {
		cfg.NackBackoff = func(int) time.Duration { return shortNack }
	}
	if cfg.CloseTimeout == 0 {
		cfg.CloseTimeout = 2 * time.Second
	}
	if cfg.RetryMin == 0 {
		cfg.RetryMin = 20 * time.Millisecond
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = 250 * time.Millisecond
	}
	return cfg
}

func newSubscriber(t *testing.T, h Harness, cfg pubsub.SubscriberConfig) *pubsub.Subscriber {
	t.Helper()
	sub, err := pubsub.NewSubscriber(h.Backend, subscriberConfig(cfg), logger)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := sub.Close(); err != nil {
			t.Errorf("close subscriber: %v", err)
		}
	})
	return sub
}

func newPublisher(t *testing.T, h Harness, cfg pubsub.PublisherConfig) *pubsub.Publisher {
	t.Helper()
	pub, err := pubsub.NewPublisher(h.Backend, cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := pub.Close(); err != nil {
			t.Errorf("close publisher: %v", err)
		}
	})
	return pub
}

// subscribe subscribes until the subscriber is closed (in t.Cleanup at the latest).
func subscribe(t *testing.T, sub *pubsub.Subscriber, topic string) <-chan *message.Message {
	t.Helper()
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	return ch
}

func newMessage(payload string) *message.Message {
	return message.NewMessage(watermill.NewUUID(), []byte(payload))
}

func newMessages(n int) []*message.Message {
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = newMessage(strconv.Itoa(i))
	}
	return msgs
}

func uuids(msgs []*message.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.UUID
	}
	return ids
}

func publish(t *testing.T, pub *pubsub.Publisher, topic string, msgs ...*message.Message) {
	t.Helper()
	require.NoError(t, pub.Publish(topic, msgs...))
}

// receive returns the next message of ch, failing the test if none comes in waitTimeout.
func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case msg, ok := <-ch:
		require.True(t, ok, "the subscription channel was closed")
		return msg
	case <-time.After(waitTimeout):
		require.FailNow(t, "no message received", "waited %v", waitTimeout)
		return nil
	}
}

// noMessage asserts that ch delivers nothing for window.
func noMessage(t *testing.T, ch <-chan *message.Message, window time.Duration) {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if ok {
			require.FailNow(t, "unexpected message", "uuid %s payload %q attempt %d", msg.UUID, msg.Payload, pubsub.Attempt(msg))
		}
	case <-time.After(window):
	}
}

// never asserts that happened stays false for the whole window (polled).
func never(t *testing.T, window time.Duration, happened func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(window)
	for time.Now().Before(deadline) {
		require.False(t, happened(), what)
		time.Sleep(tick)
	}
	require.False(t, happened(), what)
}

func stats(t *testing.T, h Harness, topic, group string) backend.Stats {
	t.Helper()
	s, err := h.Backend.Stats(context.Background(), &backend.StatsParams{Topic: topic, Group: group})
	require.NoError(t, err)
	return s
}

// counts is the state part of Stats that tests compare exactly.
type counts struct{ Ready, Delayed, Pending, Dead int64 }

func countsOf(s backend.Stats) counts {
	return counts{Ready: s.Ready, Delayed: s.Delayed, Pending: s.Pending, Dead: s.Dead}
}

// requireCounts waits until the group's state is want (acks are coalesced, so a handler's
// Ack reaches Redis a moment later) and returns the Stats that matched.
func requireCounts(t *testing.T, h Harness, topic, group string, want counts) backend.Stats {
	t.Helper()
	var last backend.Stats
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, err := h.Backend.Stats(context.Background(), &backend.StatsParams{Topic: topic, Group: group})
		if !assert.NoError(c, err) {
			return
		}
		last = s
		assert.Equal(c, want, countsOf(s), "state of group %q of topic %q", group, topic)
	}, waitTimeout, tick)
	return last
}

// requireSettled waits until nothing of the group is ready, delayed or pending, and dead
// letters number dead.
func requireSettled(t *testing.T, h Harness, topic, group string, dead int64) backend.Stats {
	t.Helper()
	return requireCounts(t, h, topic, group, counts{Dead: dead})
}

// notEarly asserts that something due after delay, measured from a moment before the
// operation that set the due time, did not happen early.
func notEarly(t *testing.T, elapsed, delay time.Duration, what string) {
	t.Helper()
	require.GreaterOrEqual(t, elapsed, delay-clockSlack, "%s after %v, before its delay of %v", what, elapsed, delay)
}

// idLess orders delivery IDs: a per-topic counter ("17") or a stream entry ID ("1700-3"),
// compared field by field as numbers.
func idLess(a, b string) bool {
	fa, fb := idFields(a), idFields(b)
	for i := 0; i < len(fa) && i < len(fb); i++ {
		if fa[i] != fb[i] {
			return fa[i] < fb[i]
		}
	}
	if len(fa) != len(fb) {
		return len(fa) < len(fb)
	}
	return a < b
}

func idFields(id string) []uint64 {
	parts := strings.FieldsFunc(id, func(r rune) bool { return r < '0' || r > '9' })
	out := make([]uint64, 0, len(parts))
	for _, p := range parts {
		n, _ := strconv.ParseUint(p, 10, 64)
		out = append(out, n)
	}
	return out
}

// receiveIndexes receives n messages whose payloads are decimal indexes, acks each, and
// returns the indexes in delivery order; every one must be a first delivery.
func receiveIndexes(t *testing.T, ch <-chan *message.Message, n int) []int {
	t.Helper()
	got := make([]int, 0, n)
	for range n {
		msg := receive(t, ch)
		i, err := strconv.Atoi(string(msg.Payload))
		require.NoError(t, err)
		require.Equal(t, 1, pubsub.Attempt(msg), "message %d delivered again", i)
		got = append(got, i)
		require.True(t, msg.Ack())
	}
	return got
}

// orderKey is the one partition key inOrder gives messages.
const orderKey = "in-order"

// inOrder prepares msgs for a test that relies on their order: on a Partitioned backend, whose
// orders hold among the messages of one key, they get one key; elsewhere they stay as they are.
func inOrder(h Harness, msgs ...*message.Message) []*message.Message {
	if h.Backend.Capabilities().Partitioned {
		for _, m := range msgs {
			pubsub.SetKey(m, orderKey)
		}
	}
	return msgs
}
