package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/pubsub"
)

// MeasureRetryLateness measures how long after its due time a message nacked with a delay
// reaches a handler again while every consumer of its group waits idle: RetryRounds rounds
// against one subscriber with default settings (Block 500ms, Lease 30s, so the reclaim loop
// runs every 15s). In each round one message is published; the handler nacks its first
// delivery with RetryDelay (pubsub.SetNackDelay) and acks the second. The lateness is the
// second handler start minus (the Nack call + RetryDelay): the due time is set from the Redis
// clock when the nack reaches Redis, after the call, so it is overstated by at most that
// trip. Rounds start a random pause in [0, RetryGap) apart, so that the nacks fall at every
// phase of the subscriber's Block and idle probe. The baseline has no nack delay: ErrNoDelay.
func MeasureRetryLateness(ctx context.Context, c *redis.Client, t Target, cfg Config) (Percentiles, error) {
	cfg = cfg.WithDefaults()
	if t.Baseline() {
		return Percentiles{}, ErrNoDelay
	}
	in, err := t.open(c, "retry")
	if err != nil {
		return Percentiles{}, err
	}
	defer in.close(context.WithoutCancel(ctx))
	if err := in.ensureGroup(ctx); err != nil {
		return Percentiles{}, err
	}
	sub, err := in.subscriber("idle", subscriberOptions{})
	if err != nil {
		return Percentiles{}, err
	}
	ch, err := sub.Subscribe(ctx, in.topic)
	if err != nil {
		return Percentiles{}, err
	}
	type result struct {
		late time.Duration
		err  error
	}
	results := make(chan result, 2*cfg.RetryRounds) // never blocks the handler
	go func() {
		var nacked time.Time
		for msg := range ch {
			if pubsub.Attempt(msg) == 1 {
				pubsub.SetNackDelay(msg, cfg.RetryDelay)
				nacked = time.Now()
				msg.Nack()
				continue
			}
			arrived := time.Now()
			msg.Ack()
			if pubsub.Attempt(msg) != 2 {
				results <- result{err: fmt.Errorf("benchmarks: %s retry lateness: attempt %d", t.Name, pubsub.Attempt(msg))}
				continue
			}
			results <- result{late: arrived.Sub(nacked) - cfg.RetryDelay}
		}
	}()
	pub, err := in.publisher()
	if err != nil {
		return Percentiles{}, err
	}
	rng := rand.New(rand.NewPCG(3, 4))
	late := make([]time.Duration, 0, cfg.RetryRounds)
	for range cfg.RetryRounds {
		// The subscriber settles into its idle wait, at a random phase of its Block and probe.
		time.Sleep(time.Duration(rng.Int64N(int64(cfg.RetryGap))))
		if err := pub.Publish(in.topic, messages(1, cfg.PayloadBytes)...); err != nil {
			return Percentiles{}, err
		}
		select {
		case r := <-results:
			if r.err != nil {
				return Percentiles{}, r.err
			}
			late = append(late, r.late)
		case <-ctx.Done():
			return Percentiles{}, ctx.Err()
		case <-time.After(cfg.RetryDelay + 30*time.Second):
			return Percentiles{}, fmt.Errorf("benchmarks: %s retry lateness: no redelivery in %v", t.Name, cfg.RetryDelay+30*time.Second)
		}
	}
	if err := in.close(ctx); err != nil {
		return Percentiles{}, err
	}
	return percentiles(late), nil
}
