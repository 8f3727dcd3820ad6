package benchmarks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// MeasureEndToEnd pre-fills a backlog of EndToEndMessages (batches of BatchSize), then starts
// subscribers in one group, each acking at once in its handler, and returns messages per
// second from the start of the subscribers to the last Ack call. Subscribers use the
// library defaults: relq Concurrency 1, Prefetch 10; redisstream one message at a time.
func MeasureEndToEnd(ctx context.Context, c *redis.Client, t Target, cfg Config, subscribers int) (float64, error) {
	return endToEnd(ctx, c, t, cfg, subscribers, false)
}

// MeasureEndToEndConcurrent starts subscribers in one group first (each acking at once in
// its handler, library defaults as in MeasureEndToEnd), then one producer publishes
// EndToEndMessages in batches of BatchSize, as fast as it can, while they consume. It
// returns messages per second from the first Publish call to the last Ack call.
func MeasureEndToEndConcurrent(ctx context.Context, c *redis.Client, t Target, cfg Config, subscribers int) (float64, error) {
	return endToEnd(ctx, c, t, cfg, subscribers, true)
}

// endToEnd is MeasureEndToEnd (concurrent false: pre-filled backlog, clock from the first
// subscriber start) or MeasureEndToEndConcurrent (clock from the first Publish).
func endToEnd(ctx context.Context, c *redis.Client, t Target, cfg Config, subscribers int, concurrent bool) (float64, error) {
	cfg = cfg.WithDefaults()
	n := cfg.EndToEndMessages
	scope := fmt.Sprintf("e2e%d", subscribers)
	if concurrent {
		scope = fmt.Sprintf("e2ec%d", subscribers)
	}
	in, err := t.open(c, scope)
	if err != nil {
		return 0, err
	}
	defer in.close(context.WithoutCancel(ctx))
	if err := in.ensureGroup(ctx); err != nil {
		return 0, err
	}
	pub, err := in.publisher()
	if err != nil {
		return 0, err
	}
	msgs := messages(n, cfg.PayloadBytes)
	publishAll := func() error {
		for i := 0; i < n; i += cfg.BatchSize {
			if err := pub.Publish(in.topic, msgs[i:min(i+cfg.BatchSize, n)]...); err != nil {
				return err
			}
		}
		return nil
	}
	if !concurrent {
		if err := publishAll(); err != nil {
			return 0, err
		}
	}

	r := newAcked(n)
	subCtx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); r.wg.Wait() }()
	start := time.Now()
	for i := range subscribers {
		sub, err := in.subscriber(fmt.Sprintf("c%d", i), subscriberOptions{})
		if err != nil {
			return 0, err
		}
		ch, err := sub.Subscribe(subCtx, in.topic)
		if err != nil {
			return 0, err
		}
		r.handle(ch)
	}
	var pubErr chan error // stays nil (never ready) for a pre-filled backlog
	if concurrent {
		// Let every subscriber reach its first (blocking) read, so the clock measures the
		// flow, not the start-up.
		time.Sleep(200 * time.Millisecond)
		pubErr = make(chan error, 1)
		start = time.Now()
		go func() { pubErr <- publishAll() }()
	}
	timeout := time.After(2*time.Minute + time.Duration(n)*time.Millisecond)
	for waiting := true; waiting; {
		select {
		case err := <-pubErr:
			if err != nil {
				return 0, err
			}
			pubErr = nil
		case <-r.done:
			waiting = false
		case <-timeout:
			return 0, fmt.Errorf("%s end-to-end: %d of %d messages received", t.Name, r.count(), n)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return perSecond(n, r.last.Sub(start)), in.close(ctx)
}

// acked notes the distinct messages the handlers acked, and when the last of n was.
type acked struct {
	n    int
	mu   sync.Mutex
	seen map[string]struct{}
	last time.Time     // set once, before done closes
	done chan struct{} // closed at the n-th distinct message
	wg   sync.WaitGroup
}

func newAcked(n int) *acked {
	return &acked{n: n, seen: make(map[string]struct{}, n), done: make(chan struct{})}
}

// handle acks every message of ch at once, in a goroutine of its own, and notes it.
func (r *acked) handle(ch <-chan *message.Message) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for msg := range ch {
			msg.Ack()
			r.mu.Lock()
			r.seen[msg.UUID] = struct{}{}
			if len(r.seen) == r.n && r.last.IsZero() {
				r.last = time.Now()
				close(r.done)
			}
			r.mu.Unlock()
		}
	}()
}

// count is how many distinct messages were acked so far.
func (r *acked) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}
