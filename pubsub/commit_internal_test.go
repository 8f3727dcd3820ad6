package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// These tests drive the group commit with an in-memory backend whose Publish calls can be
// held, so that which calls share a flush is decided by the test, not by the scheduler.

const commitWait = 10 * time.Second

// memPublish is a Backend of which only Publish works: it stores messages in memory, records
// the size of every call, and can hold a call until released or fail it.
type memPublish struct {
	backend.Backend // nil: any other method panics

	mu      sync.Mutex
	stored  []backend.Envelope
	calls   []int                 // messages per Publish call
	hold    map[int]chan struct{} // call index -> closed to let it proceed
	fail    map[int]error         // call index -> its error
	started chan int              // call indexes, as they begin
	dropped int64                 // backlog drops every call reports
}

func newMemPublish(held ...int) *memPublish {
	m := &memPublish{hold: map[int]chan struct{}{}, fail: map[int]error{}, started: make(chan int, 1000)}
	for _, i := range held {
		m.hold[i] = make(chan struct{})
	}
	return m
}

func (m *memPublish) Name() string { return "mem" }

func (m *memPublish) Publish(ctx context.Context, p *backend.PublishParams) (backend.PublishResult, error) {
	m.mu.Lock()
	i := len(m.calls)
	m.calls = append(m.calls, len(p.Messages))
	hold, fail := m.hold[i], m.fail[i]
	m.mu.Unlock()
	m.started <- i
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done(): // a flush must not be cancelled while a caller still waits for it
			return backend.PublishResult{}, ctx.Err()
		}
	}
	if fail != nil {
		return backend.PublishResult{}, fail
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, len(p.Messages))
	for j, om := range p.Messages {
		m.stored = append(m.stored, om.Envelope)
		ids[j] = strconv.Itoa(len(m.stored))
	}
	return backend.PublishResult{IDs: ids, BacklogDropped: m.dropped}, nil
}

func (m *memPublish) release(i int) { close(m.hold[i]) }

// waitStarted waits until Publish call i has begun.
func (m *memPublish) waitStarted(t *testing.T, i int) {
	t.Helper()
	deadline := time.After(commitWait)
	for {
		select {
		case got := <-m.started:
			if got == i {
				return
			}
		case <-deadline:
			t.Fatalf("Publish call %d did not start within %v", i, commitWait)
		}
	}
}

func (m *memPublish) callSizes() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.calls...)
}

// payloads returns the stored payloads, in store order.
func (m *memPublish) payloads() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.stored))
	for i, e := range m.stored {
		out[i] = string(e.Payload)
	}
	return out
}

func newCommitPublisher(t *testing.T, b backend.Backend) *Publisher {
	t.Helper()
	p, err := NewPublisher(b, PublisherConfig{}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// queued returns how many calls wait in topic's queue.
func (p *Publisher) queued(topic string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.topics[topic]; q != nil {
		return len(q.calls)
	}
	return 0
}

func waitQueued(t *testing.T, p *Publisher, topic string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return p.queued(topic) == n }, commitWait, time.Millisecond,
		"%d call(s) queued on %q", n, topic)
}

// msgs returns n messages with payloads "<name>-0", "<name>-1", ...
func msgs(ctx context.Context, name string, n int) []*message.Message {
	out := make([]*message.Message, n)
	for i := range out {
		out[i] = message.NewMessage(fmt.Sprintf("%s-%d", name, i), []byte(fmt.Sprintf("%s-%d", name, i)))
		out[i].SetContext(ctx)
	}
	return out
}

// call is a Publish running in its own goroutine.
type call chan error

func publishAsync(p *Publisher, topic string, ms ...*message.Message) call {
	c := make(call, 1)
	go func() { c <- p.Publish(topic, ms...) }()
	return c
}

func (c call) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(commitWait):
		t.Fatalf("Publish did not return within %v", commitWait)
		return nil
	}
}

// N concurrent calls that arrive while a flush is in flight go out together in the next
// Backend.Publish, and each message is stored once, every call's messages contiguous and in
// order.
func TestPublishCoalescesConcurrentCalls(t *testing.T) {
	t.Parallel()
	const callers, per = 50, 3
	b := newMemPublish(0)
	p := newCommitPublisher(t, b)
	ctx := context.Background()

	first := publishAsync(p, "t", msgs(ctx, "first", 1)...)
	b.waitStarted(t, 0)
	calls := make([]call, callers)
	for i := range calls {
		calls[i] = publishAsync(p, "t", msgs(ctx, "c"+strconv.Itoa(i), per)...)
	}
	waitQueued(t, p, "t", callers)
	b.release(0)

	require.NoError(t, first.result(t))
	for _, c := range calls {
		require.NoError(t, c.result(t))
	}
	require.Equal(t, []int{1, callers * per}, b.callSizes(), "the queued calls went out in one Backend.Publish")

	stored := b.payloads()
	require.Len(t, stored, 1+callers*per)
	seen := map[string]int{}
	for i, s := range stored {
		_, dup := seen[s]
		require.False(t, dup, "%s stored twice", s)
		seen[s] = i
	}
	for i := range callers {
		name := "c" + strconv.Itoa(i)
		start, ok := seen[name+"-0"]
		require.True(t, ok, "%s not stored", name)
		for j := range per {
			require.Equal(t, fmt.Sprintf("%s-%d", name, j), stored[start+j], "a call's messages are contiguous and in order")
		}
	}
}

// An idle publisher sends at once, one Backend.Publish per call.
func TestPublishIdleSendsAtOnce(t *testing.T) {
	t.Parallel()
	b := newMemPublish()
	p := newCommitPublisher(t, b)
	for i := range 3 {
		require.NoError(t, p.Publish("t", msgs(context.Background(), "m"+strconv.Itoa(i), 2)...))
	}
	require.Equal(t, []int{2, 2, 2}, b.callSizes())
	require.Zero(t, p.queued("t"))
	p.mu.Lock()
	require.Empty(t, p.topics, "an idle topic is forgotten")
	p.mu.Unlock()
}

// A queue larger than the bounds goes out in several calls, in call order; a call larger
// than the bounds is never split.
func TestPublishCommitIsBounded(t *testing.T) {
	t.Parallel()
	b := newMemPublish(0)
	p := newCommitPublisher(t, b)
	p.maxMessages = 10
	ctx := context.Background()

	first := publishAsync(p, "t", msgs(ctx, "first", 1)...)
	b.waitStarted(t, 0)
	var calls []call
	for i, n := range []int{3, 3, 3, 3, 3, 3, 3, 15} {
		calls = append(calls, publishAsync(p, "t", msgs(ctx, "c"+strconv.Itoa(i), n)...))
		waitQueued(t, p, "t", i+1) // one at a time, so the queue order is known
	}
	b.release(0)
	require.NoError(t, first.result(t))
	for _, c := range calls {
		require.NoError(t, c.result(t))
	}
	require.Equal(t, []int{1, 9, 9, 3, 15}, b.callSizes())

	// The byte bound: two messages fit, a third would not.
	b2 := newMemPublish(0)
	p2 := newCommitPublisher(t, b2)
	one := len(backend.EncodeEnvelope(backend.Envelope{UUID: "x-0", Payload: []byte("x-0")}))
	p2.maxBytes = 2*one + one/2
	first = publishAsync(p2, "t", msgs(ctx, "first", 1)...)
	b2.waitStarted(t, 0)
	calls = calls[:0]
	for i := range 5 {
		calls = append(calls, publishAsync(p2, "t", msgs(ctx, strconv.Itoa(i), 1)...))
		waitQueued(t, p2, "t", i+1)
	}
	b2.release(0)
	require.NoError(t, first.result(t))
	for _, c := range calls {
		require.NoError(t, c.result(t))
	}
	require.Equal(t, []int{1, 2, 2, 1}, b2.callSizes())
	require.Equal(t, []string{"first-0", "0-0", "1-0", "2-0", "3-0", "4-0"}, b2.payloads())
}

// A failed flush fails exactly the calls it carried, each with its own count in the error.
func TestPublishCommitErrorReachesOnlyItsFlush(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	b := newMemPublish(0, 1)
	b.fail[1] = boom
	p := newCommitPublisher(t, b)
	ctx := context.Background()

	a := publishAsync(p, "t", msgs(ctx, "a", 1)...)
	b.waitStarted(t, 0)
	bc := publishAsync(p, "t", msgs(ctx, "b", 1)...)
	waitQueued(t, p, "t", 1)
	cc := publishAsync(p, "t", msgs(ctx, "c", 2)...)
	waitQueued(t, p, "t", 2)
	b.release(0)
	b.waitStarted(t, 1) // b and c in flight, failing
	dc := publishAsync(p, "t", msgs(ctx, "d", 1)...)
	waitQueued(t, p, "t", 1)
	b.release(1)

	require.NoError(t, a.result(t))
	errB, errC := bc.result(t), cc.result(t)
	require.ErrorIs(t, errB, boom)
	require.ErrorIs(t, errC, boom)
	require.EqualError(t, errB, `relq: publish 1 message(s) to "t": boom`)
	require.EqualError(t, errC, `relq: publish 2 message(s) to "t": boom`)
	require.NoError(t, dc.result(t))
	require.Equal(t, []int{1, 3, 1}, b.callSizes())
	require.Equal(t, []string{"a-0", "d-0"}, b.payloads())
}

// Validation fails a call on its own, before it queues, and never touches the others.
func TestPublishCommitInvalidCallFailsAlone(t *testing.T) {
	t.Parallel()
	b := newMemPublish(0)
	p, err := NewPublisher(b, PublisherConfig{MaxMessageBytes: 100}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()

	a := publishAsync(p, "t", msgs(ctx, "a", 1)...)
	b.waitStarted(t, 0)
	ok1 := publishAsync(p, "t", msgs(ctx, "ok1", 1)...)
	waitQueued(t, p, "t", 1)

	require.ErrorIs(t, p.Publish("t", append(msgs(ctx, "nil", 1), nil)...), backend.ErrNilMessage)
	require.ErrorIs(t, p.Publish("t", append([]*message.Message{nil}, msgs(ctx, "nil", 1)...)...), backend.ErrNilMessage)
	reserved := msgs(ctx, "reserved", 1)
	reserved[0].Metadata.Set(ReservedPrefix+"typo", "1")
	require.ErrorIs(t, p.Publish("t", reserved...), backend.ErrReservedMetadata)
	big := message.NewMessage("big", make([]byte, 200))
	require.ErrorIs(t, p.Publish("t", big), backend.ErrMessageTooLarge)
	require.ErrorIs(t, p.Publish("bad topic", msgs(ctx, "x", 1)...), backend.ErrInvalidName)
	require.Equal(t, 1, p.queued("t"), "an invalid call queued")

	ok2 := publishAsync(p, "t", msgs(ctx, "ok2", 1)...)
	waitQueued(t, p, "t", 2)
	b.release(0)
	require.NoError(t, a.result(t))
	require.NoError(t, ok1.result(t))
	require.NoError(t, ok2.result(t))
	require.Equal(t, []string{"a-0", "ok1-0", "ok2-0"}, b.payloads())
}

// A call whose context ends while it is queued leaves the queue at once: its messages are
// never sent, and the others are not affected. A call already cancelled never sends.
func TestPublishCommitCancelWhileQueued(t *testing.T) {
	t.Parallel()
	b := newMemPublish(0)
	p := newCommitPublisher(t, b)
	bg := context.Background()

	err := p.Publish("t", msgs(canceled(), "dead", 1)...)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, b.callSizes(), "a call already cancelled was sent")

	a := publishAsync(p, "t", msgs(bg, "a", 1)...)
	b.waitStarted(t, 0)
	ctx, cancel := context.WithCancel(bg)
	gone := publishAsync(p, "t", msgs(ctx, "gone", 2)...)
	waitQueued(t, p, "t", 1)
	kept := publishAsync(p, "t", msgs(bg, "kept", 1)...)
	waitQueued(t, p, "t", 2)

	cancel()
	err = gone.result(t) // while call 0 is still held: it did not wait for the flush
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), `relq: publish 2 message(s) to "t"`)
	require.Equal(t, 1, p.queued("t"))

	b.release(0)
	require.NoError(t, a.result(t))
	require.NoError(t, kept.result(t))
	require.Equal(t, []string{"a-0", "kept-0"}, b.payloads())
	require.Equal(t, []int{1, 1}, b.callSizes())
}

// A call whose context ends while its flush is in flight returns at once; the flush goes on
// for the others (it is not cancelled by one caller) and the cancelled call's messages are
// stored all the same (at-least-once).
func TestPublishCommitCancelWhileSent(t *testing.T) {
	t.Parallel()
	b := newMemPublish(0, 1)
	p := newCommitPublisher(t, b)
	bg := context.Background()

	a := publishAsync(p, "t", msgs(bg, "a", 1)...)
	b.waitStarted(t, 0)
	lead := publishAsync(p, "t", msgs(bg, "lead", 1)...)
	waitQueued(t, p, "t", 1)
	ctx, cancel := context.WithCancel(bg)
	sent := publishAsync(p, "t", msgs(ctx, "sent", 1)...)
	waitQueued(t, p, "t", 2)
	b.release(0)
	b.waitStarted(t, 1)

	cancel()
	err := sent.result(t) // call 1 is still held
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "may be stored")

	b.release(1)
	require.NoError(t, a.result(t))
	require.NoError(t, lead.result(t))
	require.Equal(t, []string{"a-0", "lead-0", "sent-0"}, b.payloads())
}

// The leader of a shared flush is a caller like the others: when its context ends while the
// flush is on its way, it returns at once, and the flush still completes for the rest.
func TestPublishCommitLeaderReturnsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	b := newMemPublish(0, 1)
	p := newCommitPublisher(t, b)
	bg := context.Background()

	a := publishAsync(p, "t", msgs(bg, "a", 1)...)
	b.waitStarted(t, 0)
	ctx, cancel := context.WithCancel(bg)
	lead := publishAsync(p, "t", msgs(ctx, "lead", 1)...)
	waitQueued(t, p, "t", 1)
	other := publishAsync(p, "t", msgs(bg, "other", 1)...)
	waitQueued(t, p, "t", 2)
	b.release(0)
	b.waitStarted(t, 1) // lead sends lead-0 and other-0 together; call 1 is held

	cancel()
	err := lead.result(t)
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "may be stored")

	b.release(1)
	require.NoError(t, a.result(t))
	require.NoError(t, other.result(t))
	require.Equal(t, []string{"a-0", "lead-0", "other-0"}, b.payloads())
}

// The flush of several calls ends at the latest of their deadlines, not at the leader's.
func TestCommitContext(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	soon, cancelSoon := context.WithTimeout(bg, time.Minute)
	defer cancelSoon()
	later, cancelLater := context.WithTimeout(bg, time.Hour)
	defer cancelLater()
	a, b := &publishCall{ctx: soon}, &publishCall{ctx: later}

	ctx, stop := commitContext([]*publishCall{a, b})
	d, ok := ctx.Deadline()
	require.True(t, ok)
	want, _ := later.Deadline()
	require.Equal(t, want, d)
	cancelSoon()
	require.NoError(t, ctx.Err(), "one caller's cancellation cancelled the flush")
	cancelLater()
	require.Eventually(t, func() bool { return ctx.Err() != nil }, commitWait, time.Millisecond,
		"the flush goes on after every caller gave up")
	stop()

	ctx, stop = commitContext([]*publishCall{{ctx: bg}, {ctx: later}})
	_, ok = ctx.Deadline()
	require.False(t, ok, "a caller without a deadline waits for as long as it takes")
	stop()
}

// memReplicas adds ReplicaWaiter to memPublish, reporting the given counts in turn.
type memReplicas struct {
	*memPublish
	mu      sync.Mutex
	replies []int
	waits   int
}

func (m *memReplicas) WaitReplicas(context.Context, string, int, time.Duration) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.replies[m.waits]
	m.waits++
	return n, nil
}

// WaitReplicas runs once per flush, after it, and every call of the flush gets its outcome.
func TestPublishCommitWaitsForReplicasOncePerFlush(t *testing.T) {
	t.Parallel()
	b := &memReplicas{memPublish: newMemPublish(0), replies: []int{1, 0}}
	p, err := NewPublisher(b, PublisherConfig{WaitReplicas: 1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()

	a := publishAsync(p, "t", msgs(ctx, "a", 1)...)
	b.waitStarted(t, 0)
	c1 := publishAsync(p, "t", msgs(ctx, "c1", 1)...)
	c2 := publishAsync(p, "t", msgs(ctx, "c2", 1)...)
	waitQueued(t, p, "t", 2)
	b.release(0)
	require.NoError(t, a.result(t))
	require.ErrorIs(t, c1.result(t), ErrNotReplicated)
	require.ErrorIs(t, c2.result(t), ErrNotReplicated)
	b.mu.Lock()
	require.Equal(t, 2, b.waits, "one WAIT per flush")
	b.mu.Unlock()
}

// Close lets the calls it found queued or in flight finish, then returns; later calls fail
// with ErrClosed.
func TestPublisherCloseFinishesQueuedCalls(t *testing.T) {
	t.Parallel()
	b := newMemPublish(0)
	p := newCommitPublisher(t, b)
	ctx := context.Background()

	a := publishAsync(p, "t", msgs(ctx, "a", 1)...)
	b.waitStarted(t, 0)
	queued := publishAsync(p, "t", msgs(ctx, "queued", 1)...)
	waitQueued(t, p, "t", 1)

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = p.Close()
	}()
	require.Eventually(t, p.isClosed, commitWait, time.Millisecond)
	require.ErrorIs(t, p.Publish("t", msgs(ctx, "late", 1)...), backend.ErrClosed)
	select {
	case <-closed:
		t.Fatal("Close returned while a call was in flight")
	default:
	}

	b.release(0)
	select {
	case <-closed:
	case <-time.After(commitWait):
		t.Fatal("Close did not return once the calls finished")
	}
	require.Equal(t, []string{"a-0", "queued-0"}, b.payloads(), "Close returned before the queued call was stored")
	require.NoError(t, a.result(t))
	require.NoError(t, queued.result(t))
	require.NoError(t, p.Close(), "Close is idempotent")
}

// Topics commit independently: a flush held on one does not hold another.
func TestPublishCommitIsPerTopic(t *testing.T) {
	t.Parallel()
	b := newMemPublish(0)
	p := newCommitPublisher(t, b)
	ctx := context.Background()
	a := publishAsync(p, "one", msgs(ctx, "a", 1)...)
	b.waitStarted(t, 0)
	require.NoError(t, p.Publish("two", msgs(ctx, "b", 1)...))
	b.release(0)
	require.NoError(t, a.result(t))
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
