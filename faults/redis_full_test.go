package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Parameters of the full-Redis scenario.
const (
	fullLease    = 3 * time.Second
	fullHold     = 2 * fullLease // how long the handlers hold their messages once Redis is full
	fullHandlers = 50            // the first subscriber's Concurrency: each holds its first message
	fullBody     = 256
	fullBatch    = 100
	fullTopUp    = 20 * time.Millisecond // between one-message publishes that keep Redis full
)

// A Redis limited by maxmemory with noeviction fills up while the 50 handlers of a subscriber
// hold their messages: a publisher publishes until Publish fails, which must be with
// backend.ErrRedisFull, and then keeps Redis full with one message every 20 ms. The handlers
// hold on for two leases, so only lease extensions on a full Redis keep their messages from
// being delivered again. Still full, a second subscriber of the group (its own client and
// backend, as another process) must start, and it drains the backlog while the handlers still
// hold theirs, which then ack. Every message whose Publish returned nil is acked, none that Redis refused is
// delivered, no message is delivered again while a handler still runs, and once drained Redis
// takes a publish again.
//
// streams runs with Retention DeleteOnAck: with the default RetainUntilTrimmed an acked entry
// stays in the stream, so consuming frees no memory (docs/operations.md).
func TestRedisFull(t *testing.T) {
	t.Parallel()
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			runRedisFull(t, bc)
		})
	}
}

func runRedisFull(t *testing.T, bc backendCase) {
	mb := scale(8, 20)
	server := startFullRedis(t, mb)
	prefix := redistest.Prefix(t)
	topic := faultTopic()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	subConfig := func(consumer string, concurrency int) pubsub.SubscriberConfig {
		return pubsub.SubscriberConfig{Consumer: consumer, Concurrency: concurrency, Lease: fullLease,
			RetryMin: 20 * time.Millisecond, RetryMax: 250 * time.Millisecond}
	}

	h := newHolder()
	b := newFullBackend(t, bc, server.Client(t), prefix)
	sub1 := newFaultSubscriber(t, b, subConfig("first", fullHandlers))
	msgs1, err := sub1.Subscribe(ctx, topic)
	require.NoError(t, err)
	h.consume(msgs1, fullHandlers, true)
	defer h.stop(cancel)

	pub, err := pubsub.NewPublisher(newFullBackend(t, bc, server.Client(t), prefix), pubsub.PublisherConfig{}, faultLogger)
	require.NoError(t, err)
	for {
		err := h.publish(pub, topic, fullBatch)
		if err != nil {
			require.ErrorIs(t, err, backend.ErrRedisFull, "the error of a Publish that a full Redis refused")
			break
		}
	}
	fullAt := time.Now()
	require.True(t, pollUntil(settleTimeout, func() bool { return h.holding() == fullHandlers }),
		"the handlers hold %d messages, want %d", h.holding(), fullHandlers)
	t.Logf("%s: Redis full after %d messages; used_memory %s", bc.name, len(h.confirmedUUIDs()), usedMemory(t, server))

	// Keep Redis full: a message every fullTopUp, which Redis takes only when something freed
	// memory.
	topUp := make(chan struct{})
	toppedUp := make(chan struct{})
	go func() {
		defer close(toppedUp)
		tick := time.NewTicker(fullTopUp)
		defer tick.Stop()
		for {
			select {
			case <-topUp:
				return
			case <-tick.C:
				_ = h.publish(pub, topic, 1)
			}
		}
	}()
	stopTopUp := sync.OnceFunc(func() { close(topUp); <-toppedUp })
	defer stopTopUp()

	// Registering the group again (a subscriber starting again does) works while full.
	again := newFullBackend(t, bc, server.Client(t), prefix)
	require.NoError(t, again.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: topic, Group: backend.DefaultGroup}),
		"registering the group again on a full Redis")
	time.Sleep(time.Until(fullAt.Add(fullHold)))

	// A second subscriber starts while Redis is still full, and drains it.
	sub2 := newFaultSubscriber(t, newFullBackend(t, bc, server.Client(t), prefix), subConfig("second", 8))
	start := time.Now()
	started := make(chan error, 1)
	var msgs2 <-chan *message.Message
	go func() {
		var err error
		msgs2, err = sub2.Subscribe(ctx, topic)
		started <- err
	}()
	select {
	case err := <-started:
		require.NoError(t, err)
	case <-time.After(settleTimeout):
		require.FailNow(t, "a second subscriber did not start on a full Redis", "waited %v", settleTimeout)
	}
	startTook := time.Since(start)
	h.consume(msgs2, 8, false)
	stopTopUp()
	// The second subscriber drains the backlog while the handlers of the first still hold
	// their messages: one whose lease was lost would be delivered to it now.
	var st backend.Stats
	require.True(t, pollUntil(settleTimeout, func() bool {
		st, err = b.Stats(ctx, &backend.StatsParams{Topic: topic, Group: backend.DefaultGroup})
		return err == nil && st.Ready == 0 && st.Delayed == 0
	}), "the second subscriber did not drain the backlog: %+v, %v", st, err)
	held := time.Since(fullAt)
	h.release()

	confirmed := h.confirmedUUIDs()
	ok := pollUntil(settleTimeout, func() bool { return len(h.handled.missing(confirmed)) == 0 })
	missing := h.handled.missing(confirmed)
	require.True(t, ok, "%d of %d messages whose Publish returned nil were never delivered, e.g. %v",
		len(missing), len(confirmed), firstFew(missing, 5))
	st = waitSettled(t, b, topic)
	drained := time.Since(start)
	require.GreaterOrEqual(t, st.Counters.Acked, int64(len(confirmed)), "acked: %+v", st)
	require.Zero(t, st.Dead, "dead letters: %+v", st)
	require.Zero(t, h.overlaps.Load(), "messages delivered again while a handler still held them")
	refused := h.refusedUUIDs()
	require.Len(t, h.handled.missing(refused), len(refused), "a message whose Publish Redis refused was delivered")
	require.NoError(t, pub.Publish(topic, message.NewMessage(watermill.NewUUID(), []byte("after"))),
		"Redis should take a publish again once drained")
	used := usedMemory(t, server)

	t.Logf("%s: %d confirmed, %d refused publishes, handlers held %v (%v of it full), second subscriber started in %v, drained in %v, used_memory %s after",
		bc.name, len(confirmed), h.refusals.Load(), held.Round(time.Millisecond), fullHold+startTook,
		startTook.Round(time.Millisecond), drained.Round(time.Millisecond), used)
	record(row{
		Scenario: "8 redis full, noeviction", Backend: bc.name,
		Published: len(confirmed), Handled: len(confirmed) - len(missing), Duplicates: h.handled.duplicates(),
		Lost: len(missing), Recovery: drained,
		Note: fmt.Sprintf("maxmemory %dmb; %d publishes refused (ErrRedisFull), none stored; %d handlers held %v, %v of it full: none redelivered; 2nd subscriber up in %v",
			mb, h.refusals.Load(), fullHandlers, held.Round(100*time.Millisecond), (fullHold + startTook).Round(100*time.Millisecond),
			startTook.Round(time.Millisecond)),
	})
}

// startFullRedis starts a private redis-server limited to mb megabytes, with noeviction.
func startFullRedis(t *testing.T, mb int) *redistest.Server {
	t.Helper()
	return redistest.Start(t, redistest.Options{Args: []string{
		"--maxmemory", strconv.Itoa(mb) + "mb", "--maxmemory-policy", "noeviction",
	}})
}

// newFullBackend is newFaultBackend, but streams deletes acked entries (DeleteOnAck), so
// that consuming frees memory on every backend.
func newFullBackend(t *testing.T, bc backendCase, c redis.UniversalClient, prefix string) backend.Backend {
	t.Helper()
	if bc.name == "streams" {
		b, err := streams.New(c, streams.Options{Prefix: prefix, Retention: streams.DeleteOnAck})
		require.NoError(t, err)
		return b
	}
	b, _ := newFaultBackend(t, bc, c, prefix)
	return b
}

// usedMemory reads used_memory_human from INFO memory.
func usedMemory(t *testing.T, server *redistest.Server) string {
	t.Helper()
	info, err := server.Client(t).Info(context.Background(), "memory").Result()
	require.NoError(t, err)
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory_human:"); ok {
			return v
		}
	}
	return "?"
}

// payloadMessages returns n messages with payloads of size bytes.
func payloadMessages(n, size int) []backend.OutMessage {
	out := make([]backend.OutMessage, n)
	for i := range out {
		out[i] = backend.OutMessage{Envelope: backend.Envelope{UUID: watermill.NewUUID(), Payload: make([]byte, size)}}
	}
	return out
}

// holder runs the handlers of the full-Redis scenario: those of the first subscriber hold
// their messages until release; each handling is tallied, and a delivery of a message whose
// handler still runs is counted as an overlap. It also keeps what the publisher sent.
type holder struct {
	handled  *tally
	gate     chan struct{}
	release  func()
	overlaps atomic.Int64
	refusals atomic.Int64
	wg       sync.WaitGroup

	mu        sync.Mutex
	running   map[string]int
	held      int
	confirmed []string
	refused   []string // refused by a full Redis: never stored
}

func newHolder() *holder {
	h := &holder{handled: newTally(), gate: make(chan struct{}), running: map[string]int{}}
	h.release = sync.OnceFunc(func() { close(h.gate) })
	return h
}

// consume handles msgs with n goroutines; with hold, each waits for release before it acks.
func (h *holder) consume(msgs <-chan *message.Message, n int, hold bool) {
	for range n {
		h.wg.Go(func() {
			for msg := range msgs {
				h.mu.Lock()
				if h.running[msg.UUID] > 0 {
					h.overlaps.Add(1)
				}
				h.running[msg.UUID]++
				blocked := false
				select {
				case <-h.gate:
				default:
					blocked = hold
				}
				if blocked {
					h.held++
				}
				h.mu.Unlock()
				h.handled.add(msg.UUID)
				if blocked {
					<-h.gate
				}
				msg.Ack()
				h.mu.Lock()
				h.running[msg.UUID]--
				h.mu.Unlock()
			}
		})
	}
}

// holding returns how many handlers wait for release.
func (h *holder) holding() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// publish publishes n fresh messages and files their UUIDs as confirmed or, when Redis
// refused them as full, refused. Other errors leave them out of both (Redis may have stored
// them).
func (h *holder) publish(pub *pubsub.Publisher, topic string, n int) error {
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), make([]byte, fullBody))
	}
	err := pub.Publish(topic, msgs...)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range msgs {
		switch {
		case err == nil:
			h.confirmed = append(h.confirmed, m.UUID)
		case errors.Is(err, backend.ErrRedisFull):
			h.refused = append(h.refused, m.UUID)
		}
	}
	if errors.Is(err, backend.ErrRedisFull) {
		h.refusals.Add(1)
	}
	return err
}

func (h *holder) confirmedUUIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.confirmed...)
}

func (h *holder) refusedUUIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.refused...)
}

// stop releases the handlers, cancels the subscriptions and waits for the handlers.
func (h *holder) stop(cancel context.CancelFunc) {
	h.release()
	cancel()
	h.wg.Wait()
}
