package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/pubsub"
)

// conformanceFaults returns a backend's fault injector as conformance.Faults: every adapter's
// Faults also injects orphans, which corruptInjector leaves out.
func conformanceFaults(t *testing.T, f corruptInjector) conformance.Faults {
	t.Helper()
	cf, ok := f.(conformance.Faults)
	require.True(t, ok, "%T does not implement conformance.Faults", f)
	return cf
}

// topicLog records the hash tag ({prefix:topic}) of every topic published to through the
// backends it wraps, so that a test can check where the conformance suite's keys landed.
type topicLog struct {
	mu   sync.Mutex
	tags map[string]bool
}

func newTopicLog() *topicLog { return &topicLog{tags: make(map[string]bool)} }

// wrap returns b, recording the hash tag of each topic published to; tag gives it.
func (l *topicLog) wrap(b backend.Backend, tag func(topic string) string) backend.Backend {
	return &loggedBackend{Backend: b, log: l, tag: tag}
}

func (l *topicLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.tags))
	for tag := range l.tags {
		out = append(out, tag)
	}
	slices.Sort(out)
	return out
}

// loggedBackend is a Backend that logs the topics of its publishes. It keeps the backend's
// backend.Ephemeral, which Subscribers with ephemeral groups need, and hides its other optional
// interfaces (backend.ReplicaWaiter), which the suite does not use; the Harness gives the
// backend's Admin apart.
type loggedBackend struct {
	backend.Backend
	log *topicLog
	tag func(topic string) string
}

func (b *loggedBackend) Join(ctx context.Context, p *backend.JoinParams) error {
	return b.Backend.(backend.Ephemeral).Join(ctx, p)
}

func (b *loggedBackend) Leave(ctx context.Context, p *backend.LeaveParams) error {
	return b.Backend.(backend.Ephemeral).Leave(ctx, p)
}

func (b *loggedBackend) Publish(ctx context.Context, p *backend.PublishParams) (backend.PublishResult, error) {
	b.log.mu.Lock()
	b.log.tags[b.tag(p.Topic)] = true
	b.log.mu.Unlock()
	return b.Backend.Publish(ctx, p)
}

// ownerOf returns the address of the primary that serves key's slot.
func ownerOf(ctx context.Context, cc *redis.ClusterClient, key string) (string, error) {
	primary, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return "", err
	}
	return primary.Options().Addr, nil
}

// owners counts the keys each primary serves.
func owners(t *testing.T, cc *redis.ClusterClient, keyNames []string) map[string]int {
	t.Helper()
	out := make(map[string]int)
	for _, k := range keyNames {
		addr, err := ownerOf(context.Background(), cc, k)
		require.NoError(t, err)
		out[addr]++
	}
	return out
}

// topicsPerPrimary picks n fresh topic names per primary of the cluster: topics whose hash
// tag under prefix falls in a slot that primary serves. It returns them by primary address.
func topicsPerPrimary(t *testing.T, cc *redis.ClusterClient, prefix string, primaries []string, n int) map[string][]string {
	t.Helper()
	out := make(map[string][]string, len(primaries))
	for _, p := range primaries {
		out[p] = nil
	}
	for i := 0; ; i++ {
		require.Less(t, i, 10000, "no topic names found for every primary: %v", out)
		topic := fmt.Sprintf("topic-%d", i)
		addr, err := ownerOf(context.Background(), cc, keys.Tag(prefix, topic))
		require.NoError(t, err)
		got, known := out[addr]
		if !known || len(got) >= n {
			continue
		}
		out[addr] = append(got, topic)
		done := true
		for _, ts := range out {
			done = done && len(ts) == n
		}
		if done {
			return out
		}
	}
}

// roundTrip publishes n messages to each topic through pub and b and receives them with one
// subscriber, acking each; it fails t unless every message arrives and every topic settles.
// It returns how many distinct messages were handled, and the duplicates.
func roundTrip(t *testing.T, b backend.Backend, cfg pubsub.PublisherConfig, topics []string, n int) (handled, duplicates int) {
	t.Helper()
	sub := newFaultSubscriber(t, b, pubsub.SubscriberConfig{Concurrency: 4, Block: 100 * time.Millisecond})
	got := newTally()
	for _, topic := range topics {
		ch, err := sub.Subscribe(context.Background(), topic)
		require.NoError(t, err)
		go func() {
			for msg := range ch {
				got.add(msg.UUID)
				msg.Ack()
			}
		}()
	}
	pub, err := pubsub.NewPublisher(b, cfg, faultLogger)
	require.NoError(t, err)
	var want []string
	for _, topic := range topics {
		msgs := faultMessages(n)
		require.NoError(t, pub.Publish(topic, msgs...))
		for _, m := range msgs {
			want = append(want, m.UUID)
		}
	}
	require.True(t, pollUntil(settleTimeout, func() bool { return len(got.missing(want)) == 0 }),
		"%d of %d messages not delivered", len(got.missing(want)), len(want))
	for _, topic := range topics {
		waitSettled(t, b, topic)
	}
	return got.distinct(), got.duplicates()
}

// keepPublishing sends next()'s messages with send until stop is closed: each batch again
// every 50 ms until send returns nil, then the next one after failoverPace. record learns of
// every attempt: its messages, when it started and its error.
func keepPublishing(stop <-chan struct{}, next func() []*message.Message, send func([]*message.Message) error,
	record func(msgs []*message.Message, start time.Time, err error)) {
	for {
		msgs := next()
		for {
			start := time.Now()
			err := send(msgs)
			record(msgs, start, err)
			if err == nil {
				break
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		select {
		case <-stop:
			return
		case <-time.After(failoverPace):
		}
	}
}

// closeOnce closes stop unless it is closed already.
func closeOnce(stop chan struct{}) {
	select {
	case <-stop:
	default:
		close(stop)
	}
}

// consumeNoting acks every message until the subscriber closes ch, noting in first (under
// mu) when each was first handled, and in handled every handling.
func consumeNoting(ch <-chan *message.Message, mu *sync.Mutex, first map[string]time.Time, handled *tally) {
	for msg := range ch {
		mu.Lock()
		if _, ok := first[msg.UUID]; !ok {
			first[msg.UUID] = time.Now()
		}
		mu.Unlock()
		handled.add(msg.UUID)
		msg.Ack()
	}
}
