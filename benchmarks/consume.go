package benchmarks

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// MeasureConsume pre-fills ConsumeMessages (batches of BatchSize), then starts
// ConsumeSubscribers subscribers in one group, each acking at once in its handler (relq:
// Concurrency ConsumeConcurrency, other settings default; redisstream: defaults, one message
// in flight per subscriber), and returns what consuming and acking cost Redis per message,
// from the subscribers' start until every ack reached Redis and the subscribers closed; and
// messages per second from their start to the last handler's Ack call.
func MeasureConsume(ctx context.Context, c *redis.Client, t Target, cfg Config) (Throughput, error) {
	cfg = cfg.WithDefaults()
	n := cfg.ConsumeMessages
	in, err := t.open(c, "consume")
	if err != nil {
		return Throughput{}, err
	}
	defer in.close(context.WithoutCancel(ctx))
	if err := in.ensureGroup(ctx); err != nil {
		return Throughput{}, err
	}
	pub, err := in.publisher()
	if err != nil {
		return Throughput{}, err
	}
	for i := 0; i < n; i += cfg.BatchSize {
		if err := pub.Publish(in.topic, messages(min(cfg.BatchSize, n-i), cfg.PayloadBytes)...); err != nil {
			return Throughput{}, err
		}
	}

	r := newAcked(n)
	meter, err := startCost(ctx, c)
	if err != nil {
		return Throughput{}, err
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); r.wg.Wait() }()
	start := time.Now()
	for i := range cfg.ConsumeSubscribers {
		sub, err := in.subscriber(fmt.Sprintf("c%d", i), subscriberOptions{concurrency: cfg.ConsumeConcurrency})
		if err != nil {
			return Throughput{}, err
		}
		ch, err := sub.Subscribe(subCtx, in.topic)
		if err != nil {
			return Throughput{}, err
		}
		// One reader per in-flight message, so that Concurrency is what limits relq.
		for range cfg.ConsumeConcurrency {
			r.handle(ch)
		}
	}
	select {
	case <-r.done:
	case <-time.After(2*time.Minute + time.Duration(n)*time.Millisecond):
		return Throughput{}, fmt.Errorf("%s consume: %d of %d messages received", t.Name, r.count(), n)
	case <-ctx.Done():
		return Throughput{}, ctx.Err()
	}
	rate := perSecond(n, r.last.Sub(start))
	if t.Baseline() {
		// redisstream sends each XACK after the handler's Ack, and Close may cut the last
		// ones short: wait until Redis answered all of them.
		if !waitFor(ctx, 30*time.Second, func() bool { return in.sent.completed("xack") >= int64(n) }) {
			return Throughput{}, fmt.Errorf("%s consume: %d of %d XACKs answered", t.Name, in.sent.completed("xack"), n)
		}
	}
	// relq's Close flushes the coalesced acks still queued.
	if err := in.shutdown(); err != nil {
		return Throughput{}, err
	}
	cost, err := meter.stop(ctx, n)
	if err != nil {
		return Throughput{}, err
	}
	return Throughput{PerSec: rate, Redis: cost}, in.close(ctx)
}
