package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Parameters of the short-read-timeout scenario.
const (
	readTimeout            = 5 * time.Millisecond
	readTimeoutConcurrency = 50
	readTimeoutLease       = 3 * time.Second
	readTimeoutStall       = 10 * time.Millisecond  // another client's slow command
	readTimeoutStallEvery  = 100 * time.Millisecond // ... this often
)

// The subscriber's Redis client has a ReadTimeout of 5 ms; the publisher's has go-redis's
// default. A backlog is published, then consumed by 50 handlers that ack at once, while
// another client stalls Redis for 10 ms every 100 ms, so calls time out on the subscriber's
// client however fast the machine is. A call that times out may still have run in Redis; the
// subscriber splits it or sends it again, and every message must be acked, with the group
// left with nothing ready, pending or dead. Duplicates (leases that ran out while extensions
// timed out) are reported, not asserted.
//
// The backends run one after another, and the test not in parallel with others: a loaded
// machine makes more calls time out, and the figures should measure the timeout, not the load.
func TestShortReadTimeout(t *testing.T) {
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			runShortReadTimeout(t, bc)
		})
	}
}

func runShortReadTimeout(t *testing.T, bc backendCase) {
	n := scale(5000, 60000)
	const batch = 100

	server := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	topic := faultTopic()
	prefix := redistest.Prefix(t)
	pb, _ := newFaultBackend(t, bc, server.Client(t), prefix)
	pub, err := pubsub.NewPublisher(pb, pubsub.PublisherConfig{}, faultLogger)
	require.NoError(t, err)
	defer pub.Close()

	opt, err := redis.ParseURL(server.URL())
	require.NoError(t, err)
	opt.ReadTimeout = readTimeout
	short := redis.NewClient(opt)
	defer short.Close()
	sb, _ := newFaultBackend(t, bc, short, prefix)
	acks := &countedAcks{Backend: sb}

	// Register the group first, so that the backlog is the group's on every backend.
	require.NoError(t, pb.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: topic, Group: backend.DefaultGroup}))
	want := make([]string, 0, n)
	for len(want) < n {
		msgs := faultMessages(min(batch, n-len(want)))
		require.NoError(t, pub.Publish(topic, msgs...))
		for _, m := range msgs {
			want = append(want, m.UUID)
		}
	}

	// A short retry backoff, as in the Redis-kill scenario: the claimer's own timeouts then
	// cost milliseconds, not seconds, and the time measured is the acks'.
	sub := newFaultSubscriber(t, acks, pubsub.SubscriberConfig{
		Concurrency: readTimeoutConcurrency, Lease: readTimeoutLease,
		RetryMin: 10 * time.Millisecond, RetryMax: 250 * time.Millisecond,
	})
	subCtx, cancel := context.WithCancel(ctx)
	msgs, err := sub.Subscribe(subCtx, topic)
	require.NoError(t, err)
	handled := newTally()
	var wg sync.WaitGroup
	for range readTimeoutConcurrency {
		wg.Go(func() {
			for msg := range msgs {
				handled.add(msg.UUID)
				msg.Ack()
			}
		})
	}
	defer func() {
		cancel()
		wg.Wait()
	}()

	stop := stallRedis(server.Client(t), readTimeoutStall, readTimeoutStallEvery)
	defer stop()
	start := time.Now()
	var st backend.Stats
	ok := pollUntil(settleTimeout, func() bool {
		st, err = pb.Stats(ctx, &backend.StatsParams{Topic: topic, Group: backend.DefaultGroup})
		return err == nil && len(handled.missing(want)) == 0 &&
			st.Ready == 0 && st.Delayed == 0 && st.Pending == 0
	})
	took := time.Since(start)
	require.NoError(t, err)
	missing := handled.missing(want)
	require.True(t, ok, "not settled within %v: %d of %d never handled; %+v", settleTimeout, len(missing), n, st)
	require.Zero(t, st.Dead, "dead letters: %+v", st)
	require.Equal(t, int64(n), st.Counters.Acked, "every message acked once: %+v", st.Counters)

	calls, timeouts, largest := acks.counts()
	t.Logf("%s: %d handled in %v, %d duplicates; %d Ack calls, %d timed out, largest that succeeded %d; counters %+v",
		bc.name, n, took, handled.duplicates(), calls, timeouts, largest, st.Counters)
	record(row{
		Scenario: "7 subscriber ReadTimeout 5ms", Backend: bc.name, Published: n,
		Handled: n - len(missing), Duplicates: handled.duplicates(), Lost: len(missing),
		Note: fmt.Sprintf("all acked, nothing pending after %v; %d of %d Ack calls timed out on the client (split or sent again), largest that went through %d; stale acks %d; %d messages of claims that timed out back at lease expiry",
			took.Round(100*time.Millisecond), timeouts, calls, largest, st.Counters.StaleAcks, st.Counters.Reclaimed),
	})
}

// countedAcks counts a backend's Ack calls, those that timed out on the client, and the
// largest that succeeded.
type countedAcks struct {
	backend.Backend
	calls, timeouts, largest atomic.Int64
}

func (b *countedAcks) Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error) {
	res, err := b.Backend.Ack(ctx, p)
	b.calls.Add(1)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		b.timeouts.Add(1)
	case err == nil:
		for n := int64(len(p.Items)); ; {
			l := b.largest.Load()
			if n <= l || b.largest.CompareAndSwap(l, n) {
				break
			}
		}
	}
	return res, err
}

func (b *countedAcks) counts() (calls, timeouts, largest int64) {
	return b.calls.Load(), b.timeouts.Load(), b.largest.Load()
}

// stallScript keeps Redis busy for ARGV[1] microseconds, as another client's slow command
// would: every other client waits meanwhile.
var stallScript = redis.NewScript(`
local t = redis.call('TIME')
local from = tonumber(t[1]) * 1000000 + tonumber(t[2])
repeat
  t = redis.call('TIME')
until tonumber(t[1]) * 1000000 + tonumber(t[2]) - from >= tonumber(ARGV[1])
return 0`)

// stallRedis stalls Redis for stall at once and then every period, until the returned stop
// is called.
func stallRedis(c redis.UniversalClient, stall, period time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			_ = stallScript.Run(context.Background(), c, nil, stall.Microseconds()).Err()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
