package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/subscriber"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RunWatermill runs Watermill's own Pub/Sub suite (pubsub/tests.TestPubSub), which every
// Watermill Pub/Sub is expected to pass, with the features the backend declares. Give
// features.RestartServiceCommand (a private server's redistest RestartCommand) so that
// TestReconnect runs.
//
// Watermill runs its order tests (TestPublishSubscribeInOrder, TestNoAck) only when
// GuaranteedOrder is declared. A backend that keeps order only for one subscriber declares
// GuaranteedOrderWithSingleSubscriber instead, and RunWatermill then runs those two tests in
// the conditions they create, which that promise covers: one subscriber, Concurrency 1, no
// nacks.
//
// TestReconnect runs as a copy with one fix: Watermill v1.5.1's TestReconnect appends to its
// slice of published messages in publisher goroutines and reads it in the test goroutine as
// soon as the subscriber has every message, with no synchronisation and without waiting for
// the publishers (pubsub/tests/test_pubsub.go:1086 and :1120). So -race fails it whatever the
// Pub/Sub does, and without -race it fails now and then with "received: 10000, sent: 9999":
// the last publisher had not yet appended its message. The copy, TestReconnectRaceFree, runs
// the same scenario and the same assertions; Watermill's TestReconnect then skips for want of
// a RestartServiceCommand.
func RunWatermill(t *testing.T, features tests.Features, pubSub tests.PubSubConstructor, groupPubSub tests.ConsumerGroupPubSubConstructor) {
	if len(features.RestartServiceCommand) > 0 {
		restart := features.RestartServiceCommand
		t.Run("TestReconnectRaceFree", func(t *testing.T) { watermillReconnect(t, restart, pubSub) })
		features.RestartServiceCommand = nil
	}
	if features.GuaranteedOrderWithSingleSubscriber && !features.GuaranteedOrder {
		ordered := features
		ordered.GuaranteedOrder = true
		t.Run("WithSingleSubscriber", func(t *testing.T) {
			for name, test := range map[string]func(*testing.T, tests.TestContext, tests.PubSubConstructor){
				"TestPublishSubscribeInOrder": tests.TestPublishSubscribeInOrder,
				"TestNoAck":                   tests.TestNoAck,
			} {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					test(t, tests.TestContext{TestID: tests.NewTestID(), Features: ordered}, pubSub)
				})
			}
		})
	}
	tests.TestPubSub(t, features, pubSub, groupPubSub)
}

// watermillReconnect is Watermill v1.5.1's tests.TestReconnect with the published messages
// guarded by a mutex and the publishers waited for before the assertion: 100 publishers
// publish 10,000 messages, retrying failures, while the broker restarts at 1/3 and 1/2 of
// them; the subscriber must receive every message that was published.
func watermillReconnect(t *testing.T, restart []string, newPubSub tests.PubSubConstructor) {
	const messagesCount, publishersCount = 10000, 100
	pub, sub := newPubSub(t)
	topic := "topic-" + tests.NewTestID().String()
	if si, ok := sub.(message.SubscribeInitializer); ok {
		require.NoError(t, si.SubscribeInitialize(topic))
	}
	messages, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)

	var (
		mu          sync.Mutex
		published   message.Messages
		restartErrs []error
		wg          sync.WaitGroup
	)
	publishMessage := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range messagesCount {
			publishMessage <- struct{}{}
			if i == messagesCount/3 || i == messagesCount/2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if out, err := exec.Command(restart[0], restart[1:]...).CombinedOutput(); err != nil {
						mu.Lock()
						restartErrs = append(restartErrs, fmt.Errorf("%v: %v: %s", restart, err, out))
						mu.Unlock()
					}
				}()
			}
		}
		close(publishMessage)
	}()
	for range publishersCount {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range publishMessage {
				msg := message.NewMessage(watermill.NewUUID(), []byte("x"))
				for {
					if rand.IntN(10) == 0 { // some randomization in sending, as upstream
						time.Sleep(500 * time.Millisecond)
					}
					if publishWithRetry(pub, topic, msg) == nil {
						break
					}
					time.Sleep(500 * time.Millisecond)
				}
				mu.Lock()
				published = append(published, msg)
				mu.Unlock()
			}
		}()
	}

	received, all := subscriber.BulkReadWithDeduplication(messages, messagesCount, 60*time.Second)
	assert.True(t, all, "not all messages received (has %d of %d)", len(received), messagesCount)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		require.FailNow(t, "publishers did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, restartErrs, "restarting the broker")
	tests.AssertAllMessagesReceived(t, published, received)
	require.NoError(t, pub.Close())
	require.NoError(t, sub.Close())
}

// publishWithRetry is Watermill's: five attempts in a row.
func publishWithRetry(pub message.Publisher, topic string, msgs ...*message.Message) error {
	var err error
	for range 5 {
		if err = pub.Publish(topic, msgs...); err == nil {
			return nil
		}
	}
	return err
}
