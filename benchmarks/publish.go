package benchmarks

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// MeasurePublish publishes messages from one goroutine, batch per Publish call (1 for one
// message per call), and returns messages per second. The messages are built before the
// clock starts; the topic has no subscriber.
func MeasurePublish(ctx context.Context, c *redis.Client, t Target, cfg Config, batch int) (float64, error) {
	cfg = cfg.WithDefaults()
	n := cfg.BatchMessages
	if batch <= 1 {
		batch, n = 1, cfg.PublishMessages
	}
	in, err := t.open(c, "publish")
	if err != nil {
		return 0, err
	}
	defer in.close(context.WithoutCancel(ctx))
	pub, err := in.publisher()
	if err != nil {
		return 0, err
	}
	msgs := messages(n, cfg.PayloadBytes)
	start := time.Now()
	for i := 0; i < n; i += batch {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := pub.Publish(in.topic, msgs[i:min(i+batch, n)]...); err != nil {
			return 0, err
		}
	}
	return perSecond(n, time.Since(start)), in.close(ctx)
}
