package engine

import (
	"context"
	"errors"
	"time"

	"github.com/relq/relq/backend"
)

// Wait is a backend's blocking wait after a claim found nothing ready: for at most wait, with
// the store's earliest scheduled message due in dueIn (-1: none known). It returns what it
// claimed itself (list: the entry BLMOVE moved, registered), or whether something woke it
// (so the loop claims again), or neither when it timed out.
type Wait func(ctx context.Context, p *backend.ClaimParams, count int, wait, dueIn time.Duration) (ds []backend.Delivery, woken bool, err error)

// Claim is a backend's Claim: claim.lua, then with nothing ready and p.Block > 0 the backend's
// wait, bounded by what is left of p.Block, the context's deadline and maxBlock (> 0: the
// client's read timeout allows no longer), then claim.lua again after a wake-up. When Block
// ends with nothing, it returns nothing without another claim.lua; the consumer's next Claims
// go straight to the wait until IdleProbe passes or a due time it knows of comes. A paused
// group claims nothing: Claim sleeps out p.Block (on the local clock, holding no connection)
// and returns nothing.
func (e *Engine) Claim(ctx context.Context, p *backend.ClaimParams, maxBlock time.Duration, wait Wait) ([]backend.Delivery, error) {
	if p.Lease <= 0 {
		if err := e.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
			return nil, err
		}
		return nil, &backend.ConfigError{Field: "ClaimParams.Lease", Reason: "must be positive"}
	}
	count := min(max(p.Count, 1), e.store.BatchSize)
	end := time.Now().Add(p.Block)
	left, dueIn, skipping := e.idle.Skip(p.Topic, p.Group, p.Consumer)
	var sleeps time.Duration // how long the consumer may sleep after this claim (zset's mark)
	if p.Block > 0 {
		sleeps = p.Block + IdleProbe
	}
	for {
		w := time.Until(end)
		if skipping && p.Block > 0 {
			skipping = false // idle a moment ago: the wait sees whatever becomes ready
			w = min(w, left)
		} else {
			c, err := e.ClaimOnce(ctx, p, sleeps)
			if err != nil {
				e.idle.Forget(p.Topic, p.Group, p.Consumer) // a Redis back from a restart is probed at once
				return nil, err
			}
			if c.Paused {
				return e.sleepPaused(ctx, p, end)
			}
			if len(c.Deliveries) > 0 || p.Block <= 0 {
				e.idle.Forget(p.Topic, p.Group, p.Consumer)
				return c.Deliveries, nil
			}
			e.idle.Found(p.Topic, p.Group, p.Consumer, c.Wait)
			dueIn = c.Wait
		}
		if dl, ok := ctx.Deadline(); ok {
			w = min(w, time.Until(dl))
		}
		if maxBlock > 0 {
			w = min(w, maxBlock)
		}
		if ctx.Err() != nil {
			e.idle.Forget(p.Topic, p.Group, p.Consumer) // a cancelled Claim is most often a subscription's end
			return nil, ctx.Err()
		}
		if w <= 0 {
			return nil, nil
		}
		ds, woken, err := wait(ctx, p, count, w, dueIn)
		switch {
		case errors.Is(err, ErrPaused):
			return e.sleepPaused(ctx, p, end)
		case err != nil:
			// The wait failed (Redis restarted, say): the next Claim runs the claim script, which
			// finds at once a group that vanished with the restart.
			e.idle.Forget(p.Topic, p.Group, p.Consumer)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		case len(ds) > 0:
			e.idle.Forget(p.Topic, p.Group, p.Consumer)
			return ds, nil
		case woken:
			e.idle.Forget(p.Topic, p.Group, p.Consumer)
		case !time.Now().Before(end):
			return nil, nil // Block is over; the next Claim starts with claim.lua, or skips it
		}
		// Woken, or timed out early (a due time, maxBlock, the probe): claim again.
	}
}

// sleepPaused waits until end (a paused group's claim's Block) or ctx's end, and returns
// nothing. The consumer's next Claim runs the claim script, which sees a resume.
func (e *Engine) sleepPaused(ctx context.Context, p *backend.ClaimParams, end time.Time) ([]backend.Delivery, error) {
	e.idle.Forget(p.Topic, p.Group, p.Consumer)
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	select {
	case <-t.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
