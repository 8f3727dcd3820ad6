package zset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/engine"
)

// wakeTimeout bounds the push of a consumer's own wake-up token (wake.lua).
const wakeTimeout = time.Second

// Claim runs claim.lua: up to p.Count due messages, higher priority first, then earliest due,
// then publish order (see the package doc). With nothing due and p.Block > 0 it sleeps in
// one BLPOP on the group's wake-up list, which every publish (and a claim that leaves due
// messages behind) pushes a token onto, until a token comes, the earliest scheduled message
// is due, or p.Block (bounded by the context's deadline and the client's read timeout) is
// over; on a wake-up it runs claim.lua again. claim.lua marks the group asleep for Block
// plus the idle probe (a second), so the consumer's next Claims go straight to BLPOP until
// the probe passes or a due time it knows of comes: an idle consumer sends one BLPOP per
// Block and one claim.lua per probe, whatever is scheduled.
//
// The sleep never decides what is due: claim.lua does, on the Redis clock, and tells how many
// ms away the earliest scheduled message is. The local clock only measures that span and Block.
func (b *Backend) Claim(ctx context.Context, p *backend.ClaimParams) ([]backend.Delivery, error) {
	k := b.e.Keys(p.Topic, p.Group)
	return b.e.Claim(ctx, p, b.maxBlock, func(ctx context.Context, p *backend.ClaimParams, _ int, wait, dueIn time.Duration) ([]backend.Delivery, bool, error) {
		woken, err := b.sleep(ctx, k, p.Consumer, wait, dueIn)
		return nil, woken, err
	})
}

// sleep blocks in one BLPOP on the group's wake-up list and the consumer's own, for at most
// wait, on a connection of its own that it keeps between claims (ctx ending closes it, which
// ends the BLPOP), and reports whether a token woke it. dueIn is how long until the earliest
// scheduled message is due (-1: none scheduled). Redis ends blocking timeouts late, on its
// server tick (every 100 ms at the default hz 10), so the BLPOP's timeout cannot wake the
// consumer on time: a timer pushes a token onto the consumer's own list at the due time
// (wake.lua), which ends the BLPOP at once. The BLPOP's timeout is only the fallback, should
// that push fail: blockOvershoot after the due time, so that it does not expire just before
// the token arrives and leave it behind. The timer is stopped, or waited for, before sleep
// returns.
func (b *Backend) sleep(ctx context.Context, k engine.GroupKeys, consumer string, wait, dueIn time.Duration) (bool, error) {
	own := ownWake(k, consumer)
	timeout := wait
	if dueIn >= 0 {
		due := max(dueIn, time.Millisecond)
		timeout = min(wait, due+blockOvershoot)
		if due < wait+blockOvershoot {
			fired := make(chan struct{})
			timer := time.AfterFunc(due, func() {
				defer close(fired)
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
				defer cancel()
				_ = b.e.RunScript(wctx, b.wake, []string{own}).Err() // the BLPOP timeout is the fallback
			})
			defer func() {
				if !timer.Stop() {
					<-fired
				}
			}()
		}
	}
	err := b.e.Wait(ctx, k.Store("wake"), func(ctx context.Context, c redis.UniversalClient) error {
		cmd := redis.NewStringSliceCmd(ctx, "blpop", k.Store("wake"), own, seconds(timeout))
		_ = c.Process(ctx, cmd)
		return cmd.Err()
	})
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// seconds formats a blocking timeout in seconds with millisecond precision, rounded up so it is
// never 0 (which would block forever). go-redis's typed BLPop rounds up to whole seconds, which
// would stretch every short sleep to 1s.
func seconds(d time.Duration) string {
	n := max(backendkit.Millis(d), 1)
	return fmt.Sprintf("%d.%03d", n/1000, n%1000)
}
