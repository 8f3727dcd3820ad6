package benchmarks

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// MeasureMemory queues MemoryMessages messages for one group (nobody consumes them) and
// returns the growth of INFO used_memory divided by their number: what one queued message
// costs Redis, keys and overheads included. relq publishes through its Publisher in batches
// of BatchSize. The baseline's messages are the XADDs its Publisher would send (same
// marshaller, same arguments), pipelined BatchSize at a time only to fill faster.
func MeasureMemory(ctx context.Context, c *redis.Client, t Target, cfg Config) (float64, error) {
	cfg = cfg.WithDefaults()
	in, err := t.open(c, "memory")
	if err != nil {
		return 0, err
	}
	defer in.close(context.WithoutCancel(ctx))
	if err := in.ensureGroup(ctx); err != nil {
		return 0, err
	}
	var publish func(batch []*message.Message) error
	if t.Baseline() {
		marshaller := redisstream.DefaultMarshallerUnmarshaller{}
		publish = func(batch []*message.Message) error {
			pipe := c.Pipeline()
			for _, m := range batch {
				values, err := marshaller.Marshal(in.topic, m)
				if err != nil {
					return err
				}
				pipe.XAdd(ctx, &redis.XAddArgs{Stream: in.topic, Values: values, Approx: true})
			}
			_, err := pipe.Exec(ctx)
			return err
		}
	} else {
		pub, err := in.publisher()
		if err != nil {
			return 0, err
		}
		publish = func(batch []*message.Message) error { return pub.Publish(in.topic, batch...) }
	}
	// Warm up: the first publish loads scripts and creates the keys of the topic.
	warm := messages(1, cfg.PayloadBytes)
	if err := publish(warm); err != nil {
		return 0, err
	}
	time.Sleep(100 * time.Millisecond) // let lazy frees of earlier measurements finish
	before, err := infoField(ctx, c, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	n := cfg.MemoryMessages
	for i := 0; i < n; i += cfg.BatchSize {
		// Built per batch so that the process's memory, not Redis's, stays small.
		if err := publish(messages(min(cfg.BatchSize, n-i), cfg.PayloadBytes)); err != nil {
			return 0, err
		}
	}
	after, err := infoField(ctx, c, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), in.close(ctx)
}
