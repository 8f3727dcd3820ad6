package conformance

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// Ordered subscriptions (SubscriberConfig.Ordered) on a Partitioned backend: the messages of
// one key are handled one at a time, each once the one before it was acked, across nacks, a
// consumer that crashed holding one, and the group's shares moving as subscriptions come
// and go.
func testOrdered(t *testing.T, f Factory) {
	run(t, f, "AcrossNacks", Options{}, orderedAcrossNacks)
	run(t, f, "AfterACrash", Options{}, orderedAfterACrash)
	run(t, f, "UnderRebalancing", Options{}, orderedUnderRebalancing)
}

func skipUnlessPartitioned(t *testing.T, h Harness) {
	if !h.Backend.Capabilities().Partitioned {
		t.Skip("the backend does not declare Capabilities.Partitioned: no order per key to keep")
	}
}

// keyedMessages returns perKey messages for each of keys keys, interleaved: "k3/7" is the
// 8th message of key k3. Their order is the publish order.
func keyedMessages(keys, perKey int) []*message.Message {
	var out []*message.Message
	for i := range perKey {
		for k := range keys {
			m := newMessage(fmt.Sprintf("k%d/%d", k, i))
			pubsub.SetKey(m, "k"+strconv.Itoa(k))
			out = append(out, m)
		}
	}
	return out
}

// keyLog checks the handling of keyed messages as it happens: a message may start only when
// no other of its key is in a handler and every earlier one of its key was acked.
type keyLog struct {
	mu       sync.Mutex
	next     map[string]int  // the message each key expects next
	active   map[string]bool // keys with a message in a handler
	broken   []string
	handled  int
	attempts map[string]int
}

func newKeyLog() *keyLog {
	return &keyLog{next: map[string]int{}, active: map[string]bool{}, attempts: map[string]int{}}
}

func parseKeyed(msg *message.Message) (string, int) {
	key, n, _ := strings.Cut(string(msg.Payload), "/")
	i, _ := strconv.Atoi(n)
	return key, i
}

// start records a handler starting on msg.
func (l *keyLog) start(msg *message.Message) {
	key, i := parseKeyed(msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts[string(msg.Payload)]++
	if l.active[key] {
		l.broken = append(l.broken, fmt.Sprintf("%s/%d started while another of %s was in a handler", key, i, key))
	}
	if i != l.next[key] {
		l.broken = append(l.broken, fmt.Sprintf("%s/%d started when %s expected %d next", key, i, key, l.next[key]))
	}
	l.active[key] = true
}

// end records the handler ending: acked (ok) or nacked.
func (l *keyLog) end(msg *message.Message, ok bool) {
	key, i := parseKeyed(msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active[key] = false
	if ok && i == l.next[key] {
		l.next[key]++
		l.handled++
	}
}

func (l *keyLog) done() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.handled
}

func (l *keyLog) requireKept(t *testing.T, total int) {
	t.Helper()
	require.True(t, poll(3*waitTimeout, func() bool { return l.done() == total }), "handled %d of %d in order", l.done(), total)
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.broken, "the order per key was broken")
}

// handleOrdered runs workers handlers on ch that record each message in l, sleep for work,
// and ack it unless fail says it fails.
func handleOrdered(ch <-chan *message.Message, l *keyLog, workers int, work time.Duration, fail func(*message.Message) bool) {
	for range workers {
		go func() {
			for msg := range ch {
				l.start(msg)
				if work > 0 {
					time.Sleep(work)
				}
				ok := fail == nil || !fail(msg)
				l.end(msg, ok) // before the ack: the next of its key may come once it is settled
				if ok {
					msg.Ack()
				} else {
					msg.Nack()
				}
			}
		}()
	}
}

// A nacked message is retried before the later messages of its key, after its delay; the
// partitions are handled side by side meanwhile.
func orderedAcrossNacks(t *testing.T, h Harness) {
	skipUnlessPartitioned(t, h)
	topic := topicName()
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Ordered: true, Concurrency: 4})
	ch := subscribe(t, sub, topic)
	msgs := keyedMessages(8, 12)
	publish(t, newPublisher(t, h, pubsub.PublisherConfig{}), topic, msgs...)
	log := newKeyLog()
	handleOrdered(ch, log, 4, 0, func(m *message.Message) bool {
		_, i := parseKeyed(m)
		return i%4 == 1 && pubsub.Attempt(m) < 3 // fails twice, then is handled
	})
	log.requireKept(t, len(msgs))
	for _, m := range msgs {
		if _, i := parseKeyed(m); i%4 == 1 {
			require.Equal(t, 3, log.attempts[string(m.Payload)], "%s: handled on its third attempt", m.Payload)
		}
	}
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// A consumer that took a message of a key and crashed holds back the later messages of its
// key until its lease expires: the message is then handled first, as its second attempt.
func orderedAfterACrash(t *testing.T, h Harness) {
	skipUnlessPartitioned(t, h)
	const lease = 500 * time.Millisecond
	topic := topicName()
	ensureGroup(t, h, topic, backend.DefaultGroup)
	msgs := keyedMessages(1, 5)
	publish(t, newPublisher(t, h, pubsub.PublisherConfig{}), topic, msgs...)

	crashed := time.Now()
	var got []backend.Delivery
	require.True(t, poll(waitTimeout, func() bool {
		ds, err := h.Backend.Claim(context.Background(), &backend.ClaimParams{
			Topic: topic, Group: backend.DefaultGroup, Consumer: "crashed", Count: 5, Lease: lease, Ordered: true,
		})
		require.NoError(t, err)
		got = append(got, ds...)
		return len(got) > 0
	}))
	require.Len(t, got, 1, "an ordered claim takes one message of a partition")
	require.Equal(t, msgs[0].UUID, got[0].Envelope.UUID)
	ds, err := h.Backend.Claim(context.Background(), &backend.ClaimParams{
		Topic: topic, Group: backend.DefaultGroup, Consumer: "crashed", Count: 5, Lease: lease, Ordered: true,
	})
	require.NoError(t, err)
	require.Empty(t, ds, "nothing more of the partition while its message is out")

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Ordered: true, ReclaimInterval: 100 * time.Millisecond})
	ch := subscribe(t, sub, topic)
	first := receive(t, ch)
	notEarly(t, time.Since(crashed), lease, "the crashed consumer's message")
	require.Equal(t, msgs[0].UUID, first.UUID, "the crashed consumer's message comes first")
	require.Equal(t, 2, pubsub.Attempt(first))
	require.True(t, first.Ack())
	for _, want := range msgs[1:] {
		m := receive(t, ch)
		require.Equal(t, string(want.Payload), string(m.Payload))
		require.True(t, m.Ack())
	}
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}

// Subscriptions join and leave while the messages of many keys flow: each key's messages are
// still handled one at a time, in publish order, and none is lost.
func orderedUnderRebalancing(t *testing.T, h Harness) {
	skipUnlessPartitioned(t, h)
	topic := topicName()
	cfg := pubsub.SubscriberConfig{Ordered: true, Concurrency: 4}
	log := newKeyLog()
	start := func() *pubsub.Subscriber {
		sub, err := pubsub.NewSubscriber(h.Backend, subscriberConfig(cfg), logger)
		require.NoError(t, err)
		handleOrdered(subscribe(t, sub, topic), log, 4, 2*time.Millisecond, nil)
		return sub
	}
	first := start()
	msgs := keyedMessages(16, 25)
	publish(t, newPublisher(t, h, pubsub.PublisherConfig{}), topic, msgs...)
	atLeast := func(n int) {
		t.Helper()
		require.True(t, poll(waitTimeout, func() bool { return log.done() >= n }), "handled %d, waiting for %d", log.done(), n)
	}
	atLeast(len(msgs) / 5)
	second := start()
	t.Cleanup(func() { _ = second.Close() })
	atLeast(len(msgs) / 2)
	require.NoError(t, first.Close())
	third := start()
	t.Cleanup(func() { _ = third.Close() })
	log.requireKept(t, len(msgs))
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}
