package pubsub_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// The Watermill layer is tested on the list backend against a real Redis; what is the same
// for every backend (the delivery contract) is conformance's job, so these tests check what
// the layer itself owns: validation, metadata, batching and the close sequence.

func TestMain(m *testing.M) { redistest.Main(m) }

const waitFor = 10 * time.Second

// newBackend returns a list backend on the shared server, in a key namespace of this test.
func newBackend(t *testing.T) backend.Backend {
	t.Helper()
	b, err := list.New(redistest.Shared(t).Client(t), list.Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	return b
}

func newPublisher(t *testing.T, b backend.Backend) *pubsub.Publisher {
	t.Helper()
	p, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, watermill.NewStdLogger(false, false))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func newSubscriber(t *testing.T, b backend.Backend, c pubsub.SubscriberConfig) *pubsub.Subscriber {
	t.Helper()
	s, err := pubsub.NewSubscriber(b, c, watermill.NewStdLogger(false, false))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func stats(t *testing.T, b backend.Backend, topic string) backend.Stats {
	t.Helper()
	st, err := b.Stats(context.Background(), &backend.StatsParams{Topic: topic, Group: pubsub.DefaultGroup})
	require.NoError(t, err)
	return st
}

// eventually polls the stats of the default group until cond holds.
func eventually(t *testing.T, b backend.Backend, topic string, what string, cond func(backend.Stats) bool) backend.Stats {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		st := stats(t, b, topic)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v; stats: %+v", what, waitFor, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func publishN(t *testing.T, p *pubsub.Publisher, topic string, n int) []*message.Message {
	t.Helper()
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), []byte("payload-"+strconv.Itoa(i)))
	}
	require.NoError(t, p.Publish(topic, msgs...))
	return msgs
}

func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case msg, ok := <-ch:
		require.True(t, ok, "output channel closed")
		return msg
	case <-time.After(waitFor):
		t.Fatalf("no message within %v", waitFor)
		return nil
	}
}

// requireClosed waits for ch to close, acking anything still delivered on the way.
func requireClosed(t *testing.T, ch <-chan *message.Message) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case msg, ok := <-ch:
			if !ok {
				return
			}
			msg.Ack()
		case <-deadline:
			t.Fatalf("output channel not closed within %v", waitFor)
		}
	}
}
