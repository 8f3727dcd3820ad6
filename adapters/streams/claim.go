package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Claim runs claim.lua: due retries and unread entries, in (due time, ID) order, up to
// p.Count. With nothing to claim and p.Block > 0 it waits, then claims again, until something
// is claimed or the time left of p.Block runs out. The wait is one XREAD BLOCK on the topic's
// stream, after the last entry the group has read, and on the group's wake-up stream, which
// nack, reclaim, requeue and cleanup append to when they park deliveries: a publish, or a
// delivery parked by any process, wakes it at once. XREAD reads without changing any state,
// so nothing is claimed outside the script. The wait is bounded by the time left of p.Block
// and by the context's deadline; when a retry falls due earlier, a deadline ends the wait at
// its due time (see await), because Redis ends a blocking command only on its server tick
// (every 100 ms at the default hz).
//
// When the XREAD times out at the end of p.Block, Claim returns nothing without running
// claim.lua again, and the consumer's next Claims go straight to the XREAD until idleProbe
// (1 s) has passed since claim.lua last found nothing, or a retry it reported is due:
// whatever becomes claimable meanwhile wakes the XREAD anyway. So an idle consumer sends one
// XREAD per Block and one claim.lua per probe.
//
// A paused group claims nothing: Claim waits its Block (or ctx) and returns nothing. A group
// that is not registered fails with an error wrapping backend.ErrGroupDeleted when an operator
// deleted it (a tombstone), else backend.ErrGroupLost; an idle consumer learns it at its next
// probe.
func (b *Backend) Claim(ctx context.Context, p *backend.ClaimParams) ([]backend.Delivery, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return nil, err
	}
	if p.Lease <= 0 {
		return nil, &backend.ConfigError{Field: "ClaimParams.Lease", Reason: "must be positive"}
	}
	count := max(p.Count, 1)
	k := b.groupKeys(p.Topic, p.Group)
	key := idleKey{p.Topic, p.Group, p.Consumer}
	defer func() {
		// A Claim that its context ended is most often a subscription's last: what it knew
		// of the consumer goes with it.
		if ctx.Err() != nil {
			b.idle.forget(key)
		}
	}()
	end := time.Now().Add(p.Block)
	st, idle := b.idle.load(key)
	skip := idle && p.Block > 0 && st.skips(time.Now())
	for {
		wait := time.Until(end)
		if skip {
			skip = false // idle a moment ago: the XREAD sees whatever becomes claimable
			left := time.Until(st.probed.Add(idleProbe))
			if left <= 0 {
				continue // the probe came due meanwhile
			}
			wait = min(wait, left)
		} else {
			known, askWake := "", "1"
			if idle {
				if st.fresh {
					known = st.last
				}
				if st.wake != "" {
					askWake = "0"
				}
			}
			res, err := claimScript.Run(ctx, b.client, k.claimKeys(),
				p.Group, p.Consumer, ParkedConsumer, count, backendkit.Millis(p.Lease), max(count, b.opts.BatchSize),
				known, askWake, p.Topic, b.deleteOnAck(), b.opts.quietMs()).Slice()
			if err != nil {
				b.idle.forget(key)
				if groupGone(err) {
					return nil, fmt.Errorf("streams: claim from group %q of topic %q: %w", p.Group, p.Topic, goneError(err))
				}
				return nil, err
			}
			if backendkit.Int(res[0]) == pausedReply {
				b.idle.forget(key)
				return nil, sleep(ctx, time.Until(end))
			}
			if len(res) > 3 || p.Block <= 0 {
				b.idle.forget(key)
				return deliveries(p.Topic, res[3:]), nil
			}
			if wait <= 0 || ctx.Err() != nil {
				return nil, ctx.Err()
			}
			due := backendkit.Int(res[0])
			if due == 0 {
				continue // the script stopped at its bound or dropped stale retries: go on at once
			}
			now := time.Now()
			next := idleState{probed: now, fresh: true, wake: st.wake}
			next.last, _ = res[1].(string)
			if w, _ := res[2].(string); w != "" {
				next.wake = w
			}
			if due > 0 {
				next.due = now.Add(time.Duration(due) * time.Millisecond)
			}
			st, idle = next, true
			b.idle.store(key, st)
		}
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if wait <= 0 || ctx.Err() != nil {
			return nil, ctx.Err()
		}
		timer := false
		if !st.due.IsZero() {
			if dueIn := time.Until(st.due); dueIn < wait {
				wait, timer = max(dueIn, 0), true
			}
		}
		w, err := b.await(ctx, k, st.last, st.wake, wait, timer)
		if err != nil {
			// The XREAD failed (Redis restarted, say): the next Claim runs claim.lua, which
			// finds at once a group that vanished with the restart.
			b.idle.forget(key)
			return nil, err
		}
		if w.wake != "" {
			st.wake = w.wake
		}
		if w.stream || timer {
			// An entry came, or the due time ended the XREAD before it could tell.
			st.fresh = false
		}
		if w.stream || w.wake != "" {
			st.probed = time.Time{} // woken: the next Claim probes, should this one return first
		}
		b.idle.store(key, st)
		if !w.woken() && !timer && !time.Now().Before(end) {
			// Block is over and nothing came: return without another claim.lua.
			return nil, nil
		}
		// Woken, at a due time, or at the probe: claim again.
	}
}

// pausedReply is claim.lua's wait on a paused group.
const pausedReply = -2

// sleep waits d or until ctx ends, and returns ctx's error if it ended.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// woke is what ended an XREAD of await.
type woke struct {
	stream bool   // an entry of the topic's stream
	wake   string // the ID of a wake-up entry, when one came
}

func (w woke) woken() bool { return w.stream || w.wake != "" }

// await blocks until the topic's stream gets an entry after last or the group's wake-up
// stream one after wake, or wait passes, in one XREAD BLOCK on a connection of its own
// (backendkit.Waits). Redis times the XREAD out on its server tick, late by up to 1/hz; with
// timer, the wait's context ends it on time instead, by closing its connection, which ends
// the XREAD in Redis too: no read outlives the wait, nor ctx.
func (b *Backend) await(ctx context.Context, k groupKeys, last, wake string, wait time.Duration, timer bool) (woke, error) {
	rctx := ctx
	if timer {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var streams []redis.XStream
	err := b.waits.Run(rctx, k.topic.stream, func(ctx context.Context, c redis.UniversalClient) error {
		var err error
		streams, err = c.XRead(ctx, &redis.XReadArgs{
			Streams: []string{k.topic.stream, k.wake, last, wake},
			Count:   1,
			Block:   time.Duration(backendkit.Millis(max(wait, time.Millisecond))) * time.Millisecond,
		}).Result()
		return err
	})
	switch {
	case errors.Is(err, redis.Nil):
		return woke{}, nil
	case err != nil && ctx.Err() == nil && rctx.Err() != nil:
		return woke{}, nil // the due time came first
	case err != nil:
		return woke{}, err
	}
	var w woke
	for _, s := range streams {
		switch {
		case s.Stream == k.wake && len(s.Messages) > 0:
			w.wake = s.Messages[len(s.Messages)-1].ID
		case s.Stream == k.topic.stream:
			w.stream = true
		}
	}
	return w, nil
}

// deliveries decodes claim.lua's flat {id, attempt, fields, ...} reply. An entry that does
// not decode becomes a Delivery with Err wrapping backend.ErrCorruptEntry, for the caller to
// dead-letter.
func deliveries(topic string, flat []any) []backend.Delivery {
	return backendkit.DecodeDeliveries(flat, topic, "streams: entry", func(fields any) (backend.Envelope, error) {
		return decodeEntry(toStrings(fields))
	})
}
