package benchmarks

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// IdleCost is what one idle subscriber costs, in commands per second.
type IdleCost struct {
	// RedisPerSec counts the commands Redis ran (INFO stats total_commands_processed, which
	// includes every command inside a script), minus the measuring call.
	RedisPerSec float64 `json:"redis_per_sec"`
	// SentPerSec counts the commands the subscriber's client sent (round trips, each
	// command of a pipeline counted).
	SentPerSec float64 `json:"sent_per_sec"`
	// SentByCommand splits SentPerSec by command name (evalsha: a relq script).
	SentByCommand map[string]float64 `json:"sent_by_command"`
}

// MeasureIdleCommands starts one subscriber with default settings, hands it one message, lets
// it settle for a second (the ack, start-up claims, the first reclaim), then returns the growth of
// INFO stats total_commands_processed over IdleWindow, per second, minus the measuring INFO
// call; and the commands the subscriber's client sent meanwhile. The first counts every
// client of the server: run it on a server nobody else uses.
func MeasureIdleCommands(ctx context.Context, c *redis.Client, t Target, cfg Config) (IdleCost, error) {
	cfg = cfg.WithDefaults()
	in, err := t.open(c, "idle")
	if err != nil {
		return IdleCost{}, err
	}
	defer in.close(context.WithoutCancel(ctx))
	// One message first: a subscriber idles after work, and watermill-redisstream's first
	// read blocks without a timeout while later ones poll every BlockTime (100ms).
	r := newReceived(1)
	if err := idleSubscriber(ctx, in, r); err != nil {
		return IdleCost{}, err
	}
	pub, err := in.publisher()
	if err != nil {
		return IdleCost{}, err
	}
	if err := pub.Publish(in.topic, messages(1, cfg.PayloadBytes)...); err != nil {
		return IdleCost{}, err
	}
	if err := r.wait(ctx, t.Name+" idle", 10*time.Second); err != nil {
		return IdleCost{}, err
	}
	time.Sleep(time.Second)
	before, err := infoField(ctx, c, "stats", "total_commands_processed")
	if err != nil {
		return IdleCost{}, err
	}
	sentBefore, byNameBefore := in.sent.n.Load(), in.sent.snapshot()
	start := time.Now()
	time.Sleep(cfg.IdleWindow)
	after, err := infoField(ctx, c, "stats", "total_commands_processed")
	if err != nil {
		return IdleCost{}, err
	}
	elapsed := time.Since(start)
	sent, byName := in.sent.n.Load()-sentBefore, in.sent.snapshot()
	// The counter grows after a command runs: "after" includes the first INFO, not itself.
	const measuring = 1
	cost := IdleCost{
		RedisPerSec:   float64(after-before-measuring) / elapsed.Seconds(),
		SentPerSec:    float64(sent) / elapsed.Seconds(),
		SentByCommand: map[string]float64{},
	}
	for name, n := range byName {
		if d := n - byNameBefore[name]; d > 0 {
			cost.SentByCommand[name] = float64(d) / elapsed.Seconds()
		}
	}
	if err := in.close(ctx); err != nil {
		return IdleCost{}, err
	}
	r.wg.Wait()
	return cost, nil
}
