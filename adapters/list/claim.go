package list

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/engine"
)

// registerTimeout bounds one register.lua call after a BLMOVE, and registerPatience all of
// them: a call that failed without a reply from Redis (a timeout, a broken connection) is sent
// again until then, since the entry BLMOVE moved is already in processing and only this
// consumer knows it; given up, it waits for OrphanLease (a lease, when Redis ran the call and
// only the reply was lost), a whole Lease late. Registering runs even when the caller's
// context was cancelled meanwhile: registering the entry (so the caller can release it)
// beats leaving an orphan. register.lua returns the entry again to a resend.
const (
	registerTimeout  = 5 * time.Second
	registerPatience = 30 * time.Second
	registerRetry    = 100 * time.Millisecond
)

// fullPoll is how often a consumer with nothing ready runs claim.lua while Redis is full: a
// full Redis refuses BLMOVE (it may create a key), but not claim.lua, which pops ready with
// RPOP. What a nack, release or reclaim makes ready meanwhile is picked up within fullPoll.
const fullPoll = 100 * time.Millisecond

// promoteTimeout bounds the promote.lua call a consumer runs at a due time it waits for.
const promoteTimeout = time.Second

// blockOvershoot is how late Redis may end a blocking command after its timeout: it checks
// those timeouts on its server tick, every 100 ms at the default hz 10.
const blockOvershoot = 150 * time.Millisecond

// Claim runs claim.lua (promote due delayed messages, then claim up to p.Count). With nothing
// ready and p.Block > 0 it blocks in BLMOVE ready -> processing, woken by the next publish, for
// at most the time left of p.Block and the client's read timeout; then register.lua leases
// the moved entry and claims the rest of p.Count from ready, in the one round trip after the
// wake-up. A consumer that dies between the two leaves an orphan for Reclaim. When the BLMOVE
// times out at the end of p.Block, Claim returns nothing without running claim.lua again; the
// consumer's next Claims go straight to BLMOVE until the idle probe (a second) passes or a
// delayed message it knows of is due, so an idle consumer runs claim.lua once per probe, not
// once per Block. A full Redis refuses BLMOVE: then Claim runs claim.lua every fullPoll until
// Block ends.
//
// Delayed messages come on time to idle consumers: claim.lua marks the group asleep, and a
// publish or nack that schedules a message due before any other while it is marked pushes a
// wake-up entry into the empty ready (see lua/store.lua), which ends one consumer's BLMOVE;
// its next claim.lua reports the due time. A consumer that knows a due time runs promote.lua
// on a timer at that time, which moves the message into ready, where a BLMOVE takes it at
// once. The timer never decides what is due: promote.lua does, on the Redis clock.
func (b *Backend) Claim(ctx context.Context, p *backend.ClaimParams) ([]backend.Delivery, error) {
	return b.e.Claim(ctx, p, b.maxBlock, b.wait)
}

// wait blocks in BLMOVE for at most wait and registers the entry it moves. dueIn is how long
// until the earliest delayed message is due (-1: none scheduled): a timer runs promote.lua
// then, so the BLMOVE takes the message on time. Redis ends blocking timeouts on its server
// tick, so the BLMOVE's own timeout, cut to blockOvershoot after the due time, is only the
// fallback should the promotion fail or find nothing (another consumer took it). The timer
// is stopped, or waited for, before wait returns. While Redis is full it waits fullPoll (at
// most wait) instead.
func (b *Backend) wait(ctx context.Context, p *backend.ClaimParams, count int, wait, dueIn time.Duration) ([]backend.Delivery, bool, error) {
	if dueIn >= 0 {
		due := max(dueIn, time.Millisecond)
		if due < wait {
			fired := make(chan struct{})
			timer := time.AfterFunc(due, func() {
				defer close(fired)
				pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), promoteTimeout)
				defer cancel()
				// The BLMOVE's timeout is the fallback.
				_ = b.e.RunGroup(pctx, "promote", p.Topic, p.Group, p.Group, b.e.BatchSize()).Err()
			})
			defer func() {
				if !timer.Stop() {
					<-fired
				}
			}()
		}
		wait = min(wait, due+blockOvershoot)
	}
	entry, err := b.blmove(ctx, p, max(wait, time.Millisecond))
	switch {
	case errors.Is(err, redis.Nil):
		return nil, false, nil
	case errors.Is(err, backend.ErrRedisFull):
		// Wait a little instead, and let the engine's loop run claim.lua again.
		t := time.NewTimer(min(wait, fullPoll))
		defer t.Stop()
		select {
		case <-t.C:
			return nil, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	case err != nil:
		return nil, false, err
	}
	// An entry that was someone else's by the time it was registered returns nothing: the
	// loop claims again and waits for the next one. A paused group got it back in ready.
	c, err := b.register(ctx, p, count, entry)
	if err == nil && c.Paused {
		err = engine.ErrPaused
	}
	return c.Deliveries, true, err
}

// register runs register.lua for the entry BLMOVE moved, claiming up to count in all, and
// sends it again while it fails without Redis's answer, for registerPatience.
func (b *Backend) register(ctx context.Context, p *backend.ClaimParams, count int, entry string) (engine.Claimed, error) {
	giveUp := time.Now().Add(registerPatience)
	for {
		c, err := b.registerOnce(ctx, p, count, entry)
		var reply redis.Error
		if err == nil || errors.As(err, &reply) || errors.Is(err, backend.ErrGroupLost) ||
			errors.Is(err, backend.ErrGroupDeleted) || errors.Is(err, redis.ErrClosed) || time.Now().After(giveUp) {
			return c, err
		}
		time.Sleep(registerRetry)
	}
}

// registerOnce is one register.lua call, bounded by registerTimeout.
func (b *Backend) registerOnce(ctx context.Context, p *backend.ClaimParams, count int, entry string) (engine.Claimed, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registerTimeout)
	defer cancel()
	return b.e.RunClaim(ctx, "register", p, p.Consumer, count, backendkit.Millis(p.Lease), entry, p.Group)
}

// blmove runs BLMOVE ready processing RIGHT LEFT with a millisecond timeout, on a connection
// of its own that it keeps between claims. go-redis's typed BLMove rounds timeouts up to whole
// seconds, which would stretch every idle claim to 1s. ctx's end does not close the
// connection: once the BLMOVE has moved an entry, only its reply lets this consumer register
// it (see registerTimeout). It unblocks the BLMOVE instead (CLIENT UNBLOCK ... TIMEOUT), which
// then returns at once, with nothing or with the entry it had moved, so a stopping
// subscription releases its connection at once; where CLIENT UNBLOCK is not allowed (ACL), the
// BLMOVE ends by its timeout, at most the claim's Block later.
func (b *Backend) blmove(ctx context.Context, p *backend.ClaimParams, wait time.Duration) (string, error) {
	k := b.keys(p.Topic, p.Group)
	secs := strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)
	var entry string
	err := b.e.WaitUnblocked(ctx, k.Store("ready"), func(ctx context.Context, c redis.UniversalClient) error {
		cmd := redis.NewStringCmd(ctx, "blmove", k.Store("ready"), k.Store("processing"), "RIGHT", "LEFT", secs)
		_ = c.Process(ctx, cmd)
		entry = cmd.Val()
		return cmd.Err()
	})
	return entry, backendkit.RedisFull(err)
}
