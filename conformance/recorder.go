package conformance

import (
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/pubsub"
)

// seen is one delivery a test handler saw.
type seen struct {
	UUID       string
	DeliveryID string
	Attempt    int
	Payload    string
	Sub        int // which subscriber (test-defined index)
	At         time.Time
}

// recorder collects what handlers saw; safe for concurrent use.
type recorder struct {
	mu  sync.Mutex
	all []seen
}

func (r *recorder) add(msg *message.Message, sub int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, seen{
		UUID:       msg.UUID,
		DeliveryID: pubsub.DeliveryID(msg),
		Attempt:    pubsub.Attempt(msg),
		Payload:    string(msg.Payload),
		Sub:        sub,
		At:         time.Now(),
	})
}

func (r *recorder) list() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.all...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// of returns the deliveries of one message, in the order they were seen.
func (r *recorder) of(uuid string) []seen {
	var out []seen
	for _, s := range r.list() {
		if s.UUID == uuid {
			out = append(out, s)
		}
	}
	return out
}

// perUUID counts deliveries per message.
func (r *recorder) perUUID() map[string]int {
	out := map[string]int{}
	for _, s := range r.list() {
		out[s.UUID]++
	}
	return out
}

// waitAll waits until every message of want was seen at least once.
func (r *recorder) waitAll(t *testing.T, want []string) {
	t.Helper()
	missing := 0
	ok := poll(waitTimeout, func() bool {
		got := r.perUUID()
		missing = 0
		for _, id := range want {
			if got[id] == 0 {
				missing++
			}
		}
		return missing == 0
	})
	require.True(t, ok, "%d of %d messages never received", missing, len(want))
}

// consume runs workers goroutines that handle the messages of ch until it closes: each
// delivery is recorded, then acked if handle returns true, nacked otherwise. The goroutines
// never touch t, so they may outlive the test body until the subscriber closes.
func consume(ch <-chan *message.Message, r *recorder, sub, workers int, handle func(*message.Message) bool) {
	for range workers {
		go func() {
			for msg := range ch {
				r.add(msg, sub)
				if handle == nil || handle(msg) {
					msg.Ack()
				} else {
					msg.Nack()
				}
			}
		}()
	}
}

// poll calls cond every tick until it is true or timeout passed, and reports the last result.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(tick)
	}
}
