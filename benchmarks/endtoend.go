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
	cfg = cfg.WithDefaults()
	n := cfg.EndToEndMessages
	in, err := t.open(c, fmt.Sprintf("e2e%d", subscribers))
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
	for i := 0; i < n; i += cfg.BatchSize {
		if err := pub.Publish(in.topic, msgs[i:min(i+cfg.BatchSize, n)]...); err != nil {
			return 0, err
		}
	}

	var (
		mu   sync.Mutex
		seen = make(map[string]struct{}, n)
		last time.Time
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	handle := func(ch <-chan *message.Message) {
		defer wg.Done()
		for msg := range ch {
			mu.Lock()
			seen[msg.UUID] = struct{}{}
			msg.Ack()
			if len(seen) == n && last.IsZero() {
				last = time.Now()
				close(done)
			}
			mu.Unlock()
		}
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
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
		wg.Add(1)
		go handle(ch)
	}
	select {
	case <-done:
	case <-time.After(2*time.Minute + time.Duration(n)*time.Millisecond):
		mu.Lock()
		defer mu.Unlock()
		return 0, fmt.Errorf("%s end-to-end: %d of %d messages received", t.Name, len(seen), n)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return perSecond(n, last.Sub(start)), in.close(ctx)
}
