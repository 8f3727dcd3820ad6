package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/pubsub"
)

// received records when each message reached a handler, by UUID, until want arrived.
type received struct {
	mu   sync.Mutex
	at   map[string]time.Time
	want int
	done chan struct{}
	wg   sync.WaitGroup
}

func newReceived(want int) *received {
	return &received{at: make(map[string]time.Time, want), want: want, done: make(chan struct{})}
}

// consume acks every message of ch after noting the time its handler started.
func (r *received) consume(ch <-chan *message.Message) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for msg := range ch {
			now := time.Now()
			r.mu.Lock()
			if _, dup := r.at[msg.UUID]; !dup {
				r.at[msg.UUID] = now
				if len(r.at) == r.want {
					close(r.done)
				}
			}
			r.mu.Unlock()
			msg.Ack()
		}
	}()
}

// wait waits for every message, or fails after timeout.
func (r *received) wait(ctx context.Context, what string, timeout time.Duration) error {
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		r.mu.Lock()
		defer r.mu.Unlock()
		return fmt.Errorf("%s: %d of %d messages received in %v", what, len(r.at), r.want, timeout)
	}
}

// idleSubscriber starts one subscriber with defaults on the instance's topic and lets it go
// idle (its first claims find nothing and it blocks).
func idleSubscriber(ctx context.Context, in *instance, r *received) error {
	if err := in.ensureGroup(ctx); err != nil {
		return err
	}
	sub, err := in.subscriber("idle", subscriberOptions{})
	if err != nil {
		return err
	}
	ch, err := sub.Subscribe(ctx, in.topic)
	if err != nil {
		return err
	}
	r.consume(ch)
	time.Sleep(300 * time.Millisecond)
	return nil
}

// MeasurePickupLatency publishes LatencyMessages one per Publish call at LatencyRate per
// second to one idle subscriber with default settings, and returns the time from each
// Publish call returning to its handler starting. It can be slightly negative: the handler
// may start before the publisher's goroutine sees the reply.
func MeasurePickupLatency(ctx context.Context, c *redis.Client, t Target, cfg Config) (Percentiles, error) {
	cfg = cfg.WithDefaults()
	in, err := t.open(c, "latency")
	if err != nil {
		return Percentiles{}, err
	}
	defer in.close(context.WithoutCancel(ctx))
	r := newReceived(cfg.LatencyMessages)
	if err := idleSubscriber(ctx, in, r); err != nil {
		return Percentiles{}, err
	}
	pub, err := in.publisher()
	if err != nil {
		return Percentiles{}, err
	}
	msgs := messages(cfg.LatencyMessages, cfg.PayloadBytes)
	returned := make(map[string]time.Time, len(msgs))
	interval := time.Second / time.Duration(cfg.LatencyRate)
	start := time.Now()
	for i, m := range msgs {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		if err := pub.Publish(in.topic, m); err != nil {
			return Percentiles{}, err
		}
		returned[m.UUID] = time.Now()
	}
	if err := r.wait(ctx, t.Name+" pickup latency", 30*time.Second); err != nil {
		return Percentiles{}, err
	}
	if err := in.close(ctx); err != nil {
		return Percentiles{}, err
	}
	r.wg.Wait()
	lat := make([]time.Duration, 0, len(msgs))
	for id, at := range r.at {
		lat = append(lat, at.Sub(returned[id]))
	}
	return percentiles(lat), nil
}

// ErrNoDelay is returned by MeasureLateness for targets without Capabilities.OnTimeDelay.
var ErrNoDelay = fmt.Errorf("benchmarks: no on-time delay")

// Lateness brackets how long after its due time a delayed message reached a handler.
type Lateness struct {
	// Upper takes the due time as the Publish call plus the delay: lateness overstated by at
	// most the publish round trip. Targets are read on it.
	Upper Percentiles `json:"upper"`
	// Lower takes the due time as the Publish's return plus the delay: understated by at most
	// the round trip, and negative when a message arrived before its Publish returned.
	Lower Percentiles `json:"lower"`
}

// MeasureLateness publishes DelayMessages in batches of BatchSize with delays uniform in
// [0, DelaySpread] to one idle subscriber with default settings and returns how long after
// its due time each reached a handler. The due time is set from the Redis clock inside the
// publish, which the caller cannot see, so it is bracketed by the Publish call and return.
func MeasureLateness(ctx context.Context, c *redis.Client, t Target, cfg Config) (Lateness, error) {
	cfg = cfg.WithDefaults()
	if !t.Capabilities().OnTimeDelay {
		return Lateness{}, ErrNoDelay
	}
	in, err := t.open(c, "lateness")
	if err != nil {
		return Lateness{}, err
	}
	defer in.close(context.WithoutCancel(ctx))
	r := newReceived(cfg.DelayMessages)
	if err := idleSubscriber(ctx, in, r); err != nil {
		return Lateness{}, err
	}
	pub, err := in.publisher()
	if err != nil {
		return Lateness{}, err
	}
	msgs := messages(cfg.DelayMessages, cfg.PayloadBytes)
	rng := rand.New(rand.NewPCG(1, 2))
	delays := make([]time.Duration, len(msgs))
	for i, m := range msgs {
		delays[i] = time.Duration(rng.Int64N(int64(cfg.DelaySpread/time.Millisecond)+1)) * time.Millisecond
		pubsub.SetDelay(m, delays[i])
	}
	due := make(map[string][2]time.Time, len(msgs)) // from the call, from the return
	for i := 0; i < len(msgs); i += cfg.BatchSize {
		batch := msgs[i:min(i+cfg.BatchSize, len(msgs))]
		called := time.Now()
		if err := pub.Publish(in.topic, batch...); err != nil {
			return Lateness{}, err
		}
		returned := time.Now()
		for j, m := range batch {
			due[m.UUID] = [2]time.Time{called.Add(delays[i+j]), returned.Add(delays[i+j])}
		}
	}
	if err := r.wait(ctx, t.Name+" lateness", cfg.DelaySpread+30*time.Second); err != nil {
		return Lateness{}, err
	}
	if err := in.close(ctx); err != nil {
		return Lateness{}, err
	}
	r.wg.Wait()
	upper := make([]time.Duration, 0, len(msgs))
	lower := make([]time.Duration, 0, len(msgs))
	for id, at := range r.at {
		upper = append(upper, at.Sub(due[id][0]))
		lower = append(lower, at.Sub(due[id][1]))
	}
	return Lateness{Upper: percentiles(upper), Lower: percentiles(lower)}, nil
}
