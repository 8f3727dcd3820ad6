package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// A topic deleted while two groups' subscribers consume it and another process publishes to
// it: the subscriptions close, each publish either succeeds or fails with one of relq's
// errors, and afterwards the topic holds, in its backlog, exactly what was published after
// the delete (a publish that overlapped the delete may be in either). Another topic is
// untouched.
func deleteTopicWhilePublished(t *testing.T, h Harness) {
	a := adminOf(t, h)
	peer := peerOf(t, h)
	ctx := context.Background()
	topic, other := topicName(), topicName()

	var closed []<-chan struct{}
	for _, g := range []string{"g1", "g2"} {
		ch := subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: g}), topic)
		closed = append(closed, drainUntilClosed(ch, &recorder{}))
	}
	rOther := &recorder{}
	consume(subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: "g1"}), other), rOther, 0, 1, nil)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	otherMsgs := newMessages(10)
	publish(t, pub, other, otherMsgs...)
	rOther.waitAll(t, uuids(otherMsgs))
	otherBefore := requireSteadyState(t, h, other, "g1")

	loop := startPublishLoop(peer, topic)
	t.Cleanup(func() { loop.halt() })
	require.True(t, poll(waitTimeout, func() bool {
		return loop.storedAfter(time.Time{}) >= 20 && stats(t, h, topic, "g2").Counters.Acked > 0
	}), "the other process's messages do not flow to the subscribers")

	deleteStart := time.Now()
	require.NoError(t, a.DeleteTopic(ctx, topic))
	deleted := time.Now()
	for _, c := range closed {
		waitDone(t, c, "a subscription of the deleted topic closing")
	}
	require.True(t, poll(waitTimeout, func() bool { return loop.storedAfter(deleted) >= 10 }),
		"the other process's publishes did not go on after the delete")
	attempts := loop.halt()

	must, may := map[string]bool{}, map[string]bool{}
	for _, at := range attempts {
		if at.err != nil {
			require.True(t, isClearError(at.err), "a publish racing the delete failed with an unclear error: %v", at.err)
		}
		if at.end.After(deleteStart) {
			may[at.uuid] = true
		}
		if at.err == nil && at.start.After(deleted) {
			must[at.uuid] = true
		}
	}
	info := topicInfo(t, a, topic)
	require.Empty(t, info.Groups, "a group of the deleted topic is registered again")

	// The first group registered takes the backlog: what it holds is what the backlog held.
	ensureGroup(t, h, topic, "inspector")
	ms, _ := listAll(t, a, backend.MessagesParams{Topic: topic, Group: "inspector", State: backend.StateReady, Count: 100})
	require.Len(t, ms, int(info.Backlog), "the backlog's size and what the first group took")
	got := map[string]bool{}
	for _, m := range ms {
		got[m.Envelope.UUID] = true
		require.True(t, may[m.Envelope.UUID], "message %s, published before the delete, survived it", m.ID)
	}
	for id := range must {
		require.True(t, got[id], "message %s, published after the delete, is not in the backlog", id)
	}

	require.Equal(t, otherBefore, stateOf(stats(t, h, other, "g1")), "the group of another topic changed")
	more := newMessages(5)
	publish(t, pub, other, more...)
	rOther.waitAll(t, uuids(more))
	requireSettled(t, h, other, "g1", 0)
}

// publishAttempt is one publish of the other process: its message, when it ran, its error.
type publishAttempt struct {
	uuid       string
	start, end time.Time
	err        error
}

// publishLoop publishes to a topic, one message per call, as another process would, until
// halted. It never touches a test.
type publishLoop struct {
	mu       sync.Mutex
	attempts []publishAttempt
	stop     chan struct{}
	done     chan struct{}
	halted   sync.Once
}

func startPublishLoop(b backend.Backend, topic string) *publishLoop {
	l := &publishLoop{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.stop:
				return
			case <-time.After(2 * time.Millisecond): // a steady flow, not a flood
			}
			env := backend.Envelope{UUID: watermill.NewUUID(), Payload: []byte("from another process")}
			start := time.Now()
			_, err := b.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{{Envelope: env}}})
			l.mu.Lock()
			l.attempts = append(l.attempts, publishAttempt{uuid: env.UUID, start: start, end: time.Now(), err: err})
			l.mu.Unlock()
		}
	}()
	return l
}

// storedAfter counts the publishes that started after at and succeeded.
func (l *publishLoop) storedAfter(at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.attempts {
		if a.err == nil && a.start.After(at) {
			n++
		}
	}
	return n
}

// halt stops the loop, waits for its last publish, and returns every attempt.
func (l *publishLoop) halt() []publishAttempt {
	l.halted.Do(func() { close(l.stop) })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]publishAttempt(nil), l.attempts...)
}
