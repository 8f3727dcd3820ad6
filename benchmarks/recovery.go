package benchmarks

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// Recovery is how long a message held by a consumer that died took to reach a live one.
type Recovery struct {
	// LeaseMS is the dead consumer's lease (the baseline: the live subscriber's MaxIdleTime).
	LeaseMS float64 `json:"lease_ms"`
	// TotalMS runs from the dead consumer's claim to the live handler starting.
	TotalMS float64 `json:"total_ms"`
	// AfterLeaseMS is TotalMS minus the lease: what the library adds to it.
	AfterLeaseMS float64 `json:"after_lease_ms"`
	// Scan says how often the live subscriber looked for expired messages.
	Scan string `json:"scan"`
}

// MeasureRecovery publishes one message, claims it as a consumer that then dies without
// acking (relq: Backend.Claim with a RecoveryLease lease; the baseline: XREADGROUP, its only
// way to hold a message), starts a live subscriber and times until its handler gets the
// message. The live subscriber keeps its library's defaults unless cfg.RecoveryScan is set;
// for the baseline its MaxIdleTime is set to the lease, since it has no lease of its own
// (its default, 60s, would dominate).
func MeasureRecovery(ctx context.Context, c *redis.Client, t Target, cfg Config) (Recovery, error) {
	cfg = cfg.WithDefaults()
	in, err := t.open(c, "recovery")
	if err != nil {
		return Recovery{}, err
	}
	defer in.close(context.WithoutCancel(ctx))
	if err := in.ensureGroup(ctx); err != nil {
		return Recovery{}, err
	}
	pub, err := in.publisher()
	if err != nil {
		return Recovery{}, err
	}
	msg := messages(1, cfg.PayloadBytes)[0]
	if err := pub.Publish(in.topic, msg); err != nil {
		return Recovery{}, err
	}
	var claimed time.Time
	if t.Baseline() {
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: "dead", Streams: []string{in.topic, ">"}, Count: 1,
		}).Result()
		if err != nil {
			return Recovery{}, err
		}
		if len(res) != 1 || len(res[0].Messages) != 1 {
			return Recovery{}, fmt.Errorf("%s recovery: the dying consumer read %v", t.Name, res)
		}
	} else {
		ds, err := in.backend.Claim(ctx, &backend.ClaimParams{
			Topic: in.topic, Group: group, Consumer: "dead", Count: 1, Lease: cfg.RecoveryLease,
		})
		if err != nil {
			return Recovery{}, err
		}
		if len(ds) != 1 {
			return Recovery{}, fmt.Errorf("%s recovery: the dying consumer claimed %d messages", t.Name, len(ds))
		}
	}
	claimed = time.Now()

	r := newReceived(1)
	sub, err := in.subscriber("live", subscriberOptions{lease: cfg.RecoveryLease, scan: cfg.RecoveryScan})
	if err != nil {
		return Recovery{}, err
	}
	ch, err := sub.Subscribe(ctx, in.topic)
	if err != nil {
		return Recovery{}, err
	}
	r.consume(ch)
	if err := r.wait(ctx, t.Name+" recovery", 2*time.Minute); err != nil {
		return Recovery{}, err
	}
	r.mu.Lock()
	total := r.at[msg.UUID].Sub(claimed)
	r.mu.Unlock()
	if err := in.close(ctx); err != nil {
		return Recovery{}, err
	}
	r.wg.Wait()
	scan := cfg.RecoveryScan.String()
	if cfg.RecoveryScan == 0 {
		scan = "default: " + map[bool]string{
			true:  "ClaimInterval 5s",
			false: fmt.Sprintf("ReclaimInterval %v ±20%%", pubsub.LeaseDefault/2),
		}[t.Baseline()]
	}
	return Recovery{
		LeaseMS: msOf(cfg.RecoveryLease), TotalMS: msOf(total),
		AfterLeaseMS: msOf(total - cfg.RecoveryLease), Scan: scan,
	}, nil
}
