package conformance

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testOutage(t *testing.T, f Factory) {
	run(t, f, "NothingLostAcrossRedisRestart", Options{Private: true}, outageNothingLost)
}

// Redis goes away for four seconds while a publisher publishes and a subscriber consumes.
// Publish reports the failures, the publisher retries until it succeeds, the subscriber
// resumes by itself, and every message whose Publish returned nil is delivered.
func outageNothingLost(t *testing.T, h Harness) {
	if h.Outage == nil {
		t.Skip("the Harness gives no Outage for Options.Private: this test must stop Redis")
	}
	// Longer than one Publish takes to fail: go-redis retries a command 3 times, each after up
	// to 5 dials, so a Publish that started as Redis went away can last about 2 s and succeed
	// on the Redis that came back, and an outage that short may see no Publish fail.
	const outage = 4 * time.Second
	topic := topicName()
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Concurrency: 4, RetryMax: 200 * time.Millisecond})
	r := &recorder{}
	consume(subscribe(t, sub, topic), r, 0, 4, nil)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})

	var (
		mu       sync.Mutex
		stored   []string // UUIDs whose Publish returned nil
		failures atomic.Int64
		stop     = make(chan struct{})
		done     = make(chan struct{})
	)
	storedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(stored)
	}
	go func() {
		defer close(done)
		for {
			msg := newMessage("x")
			for {
				if err := pub.Publish(topic, msg); err == nil {
					break
				}
				failures.Add(1)
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			mu.Lock()
			stored = append(stored, msg.UUID)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	require.True(t, poll(waitTimeout, func() bool { return r.count() >= 20 }), "messages do not flow before the outage")
	require.NoError(t, h.Outage(outage))
	resumedAt := storedCount()
	require.True(t, poll(waitTimeout, func() bool { return storedCount() >= resumedAt+20 }), "publishing did not resume after the outage")
	close(stop)
	<-done

	require.Positive(t, failures.Load(), "no Publish returned an error while Redis was down")
	mu.Lock()
	want := append([]string(nil), stored...)
	mu.Unlock()
	r.waitAll(t, want)
	requireSettled(t, h, topic, backend.DefaultGroup, 0)
}
