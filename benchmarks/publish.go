package benchmarks

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Throughput is a rate and what Redis spent on it.
type Throughput struct {
	PerSec float64   `json:"per_sec"`
	Redis  RedisCost `json:"redis"`
}

// MeasurePublish publishes messages from one goroutine, batch per Publish call (1 for one
// message per call), and returns messages per second and Redis's cost per message. The
// messages are built, and one message published to warm up, before the clock starts; the
// topic has one group, registered first as a subscriber would (so relq measures a publish
// routed to a group, not to a topic's backlog), and no subscriber reads it.
func MeasurePublish(ctx context.Context, c *redis.Client, t Target, cfg Config, batch int) (Throughput, error) {
	cfg = cfg.WithDefaults()
	n := cfg.BatchMessages
	if batch <= 1 {
		batch, n = 1, cfg.PublishMessages
	}
	return publish(ctx, c, t, cfg, n, batch, 1)
}

// MeasurePublishConcurrent publishes PublishConcurrentMessages one per Publish call from
// PublishGoroutines goroutines sharing one Publisher, and returns messages per second and
// Redis's cost per message.
func MeasurePublishConcurrent(ctx context.Context, c *redis.Client, t Target, cfg Config) (Throughput, error) {
	cfg = cfg.WithDefaults()
	return publish(ctx, c, t, cfg, cfg.PublishConcurrentMessages, 1, cfg.PublishGoroutines)
}

// publish publishes n messages, batch per call, from goroutines goroutines taking the next
// batch in turn from one shared Publisher.
func publish(ctx context.Context, c *redis.Client, t Target, cfg Config, n, batch, goroutines int) (Throughput, error) {
	in, err := t.open(c, "publish")
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
	// Warm up: the first publish dials the connection and loads the script (a NOSCRIPT reply,
	// then EVAL, which compiles it): a one-off that would weigh on a small run's figures.
	if err := pub.Publish(in.topic, messages(1, cfg.PayloadBytes)...); err != nil {
		return Throughput{}, err
	}
	msgs := messages(n, cfg.PayloadBytes)
	meter, err := startCost(ctx, c)
	if err != nil {
		return Throughput{}, err
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(int64(batch))) - batch
				if i >= n {
					return
				}
				err := ctx.Err()
				if err == nil {
					err = pub.Publish(in.topic, msgs[i:min(i+batch, n)]...)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					next.Store(int64(n)) // the others stop at their next batch
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return Throughput{}, firstErr
	}
	cost, err := meter.stop(ctx, n)
	if err != nil {
		return Throughput{}, err
	}
	return Throughput{PerSec: perSecond(n, elapsed), Redis: cost}, in.close(ctx)
}
