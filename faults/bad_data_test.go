package faults

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Corrupt entries (random bytes written past the codec with Faults().InjectCorrupt) are
// mixed into good messages, one after every ten, while one subscription consumes: every good
// message is delivered exactly once, every corrupt entry is dead-lettered with the decode
// error as its reason and its bytes kept, and the same Subscribe channel stays open and keeps
// delivering to the end.
func TestBadDataAtScale(t *testing.T) {
	t.Parallel()
	server := redistest.Shared(t)
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			runBadData(t, bc, server)
		})
	}
}

func runBadData(t *testing.T, bc backendCase, server *redistest.Server) {
	good := scale(1000, 10000)
	const goodPerCorrupt = 10
	bad := good / goodPerCorrupt

	ctx := context.Background()
	topic := faultTopic()
	b, inject := newFaultBackend(t, bc, server.Client(t), redistest.Prefix(t))
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, faultLogger)
	require.NoError(t, err)
	sub := newFaultSubscriber(t, b, pubsub.SubscriberConfig{Concurrency: 4})
	subCtx, cancel := context.WithCancel(ctx)
	msgs, err := sub.Subscribe(subCtx, topic)
	require.NoError(t, err)

	handled := newTally()
	var closing, closedEarly atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range msgs {
			handled.add(msg.UUID)
			msg.Ack()
		}
		closedEarly.Store(!closing.Load())
	}()
	defer func() {
		closing.Store(true)
		cancel()
		<-done
	}()

	// Interleave: ten good messages, one corrupt entry, and so on.
	var goodIDs []string
	injected := make(map[string]int, bad) // raw bytes -> how many times
	for len(goodIDs) < good {
		batch := faultMessages(goodPerCorrupt)
		require.NoError(t, pub.Publish(topic, batch...))
		for _, m := range batch {
			goodIDs = append(goodIDs, m.UUID)
		}
		raw := corruptBytes()
		require.NoError(t, inject.InjectCorrupt(ctx, topic, backend.DefaultGroup, raw))
		injected[string(raw)]++
	}

	ok := pollUntil(settleTimeout, func() bool { return len(handled.missing(goodIDs)) == 0 })
	require.True(t, ok, "%d of %d good messages not delivered within %v", len(handled.missing(goodIDs)), good, settleTimeout)
	var st backend.Stats
	ok = pollUntil(settleTimeout, func() bool {
		st, err = b.Stats(ctx, &backend.StatsParams{Topic: topic, Group: backend.DefaultGroup})
		return err == nil && st.Dead == int64(bad) && st.Ready == 0 && st.Delayed == 0 && st.Pending == 0
	})
	require.NoError(t, err)
	require.True(t, ok, "want %d dead letters and nothing else left: %+v", bad, st)
	require.Equal(t, int64(bad), st.Counters.DeadLettered, "dead-lettered counter: %+v", st.Counters)
	require.Zero(t, handled.duplicates(), "no fault here should cause a redelivery")
	require.False(t, closedEarly.Load(), "the subscription channel closed")

	// Every dead letter is one of the injected entries, with its bytes and the decode error.
	var dls []backend.DeadLetter
	for {
		page, err := b.DeadLetters(ctx, &backend.DeadLettersParams{Topic: topic, Group: backend.DefaultGroup, Offset: len(dls), Count: 100})
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		dls = append(dls, page...)
	}
	require.Len(t, dls, bad)
	remaining := make(map[string]int, len(injected))
	for k, v := range injected {
		remaining[k] = v
	}
	for _, dl := range dls {
		require.Contains(t, dl.Reason, backend.ErrCorruptEntry.Error(), "dead letter %s", dl.ID)
		require.Equal(t, topic, dl.Topic)
		require.Equal(t, backend.DefaultGroup, dl.Group)
		require.Positive(t, remaining[string(dl.Raw)], "dead letter %s holds bytes that were not injected (or twice): %x", dl.ID, dl.Raw)
		remaining[string(dl.Raw)]--
	}

	// The same subscription still delivers.
	last := faultMessages(1)[0]
	require.NoError(t, pub.Publish(topic, last))
	require.True(t, pollUntil(settleTimeout, func() bool { return handled.count(last.UUID) == 1 }),
		"the subscription stopped delivering after the corrupt entries")
	require.False(t, closedEarly.Load(), "the subscription channel closed")

	t.Logf("%s: %d good delivered, %d corrupt dead-lettered; reasons like %q", bc.name, good, len(dls), dls[0].Reason)
	record(row{
		Scenario: "6 bad data", Backend: bc.name, Published: good,
		Handled: good - len(handled.missing(goodIDs)), Duplicates: handled.duplicates(), Lost: len(handled.missing(goodIDs)),
		Note: fmt.Sprintf("%d corrupt entries mixed in, all dead-lettered with the decode error as reason and their bytes; one Subscribe channel throughout",
			len(dls)),
	})
}

// corruptBytes returns 1 to 64 random bytes that the envelope codec rejects (random bytes
// that start with the version byte may happen to decode; those are drawn again).
func corruptBytes() []byte {
	for {
		b := make([]byte, 1+mrand.N(64))
		_, _ = rand.Read(b)
		if _, err := backend.DecodeEnvelope(b); err != nil {
			return b
		}
	}
}
