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

// PublishMemoryCallsDefault is how many single-message Publish calls MeasurePublishMemory
// makes in the Go benchmark.
const PublishMemoryCallsDefault = 10_000

// PublishMemory is what single-message Publish calls leave in Redis.
type PublishMemory struct {
	// BytesPerCall is the growth of INFO used_memory divided by the calls: the message itself
	// and whatever else a call keeps (a resend record, a key per call).
	BytesPerCall float64 `json:"bytes_per_call"`
	// Keys is DBSIZE after the calls; KeysAdded its growth over them (0 when no call leaves a
	// key of its own).
	Keys      int64 `json:"keys"`
	KeysAdded int64 `json:"keys_added"`
}

// MeasurePublishMemory makes calls Publish calls of one message each, one after the other
// through the target's Publisher (the baseline's too: one XADD per call), to a topic with one
// group that nobody consumes, and reads INFO used_memory and DBSIZE before and after. It
// shows what a publish leaves beyond its message: the server must hold no other keys (the
// Go benchmark gives each measurement a private one, and every measurement deletes its keys).
func MeasurePublishMemory(ctx context.Context, c *redis.Client, t Target, cfg Config, calls int) (PublishMemory, error) {
	cfg = cfg.WithDefaults()
	in, err := t.open(c, "pubmem")
	if err != nil {
		return PublishMemory{}, err
	}
	defer in.close(context.WithoutCancel(ctx))
	if err := in.ensureGroup(ctx); err != nil {
		return PublishMemory{}, err
	}
	pub, err := in.publisher()
	if err != nil {
		return PublishMemory{}, err
	}
	// Warm up: the first publish loads the script and creates the keys of the topic.
	if err := pub.Publish(in.topic, messages(1, cfg.PayloadBytes)...); err != nil {
		return PublishMemory{}, err
	}
	time.Sleep(100 * time.Millisecond) // let lazy frees of earlier measurements finish
	memBefore, err := infoField(ctx, c, "memory", "used_memory")
	if err != nil {
		return PublishMemory{}, err
	}
	keysBefore, err := c.DBSize(ctx).Result()
	if err != nil {
		return PublishMemory{}, err
	}
	for range calls {
		if err := pub.Publish(in.topic, messages(1, cfg.PayloadBytes)...); err != nil {
			return PublishMemory{}, err
		}
	}
	memAfter, err := infoField(ctx, c, "memory", "used_memory")
	if err != nil {
		return PublishMemory{}, err
	}
	keysAfter, err := c.DBSize(ctx).Result()
	if err != nil {
		return PublishMemory{}, err
	}
	return PublishMemory{
		BytesPerCall: float64(memAfter-memBefore) / float64(calls),
		Keys:         keysAfter,
		KeysAdded:    keysAfter - keysBefore,
	}, in.close(ctx)
}
