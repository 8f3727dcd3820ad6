package streams

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// Claim runs claim.lua: due retries and unread entries, in (due time, ID) order, up to
// p.Count. With nothing to claim and p.Block > 0 it waits, then claims again, until something
// is claimed or the time left of p.Block runs out. The wait is XREAD BLOCK on the stream
// after the group's last-delivered-id, so the next publish wakes it at once; XREAD reads
// without changing any state, so nothing is claimed outside the script. It is bounded by the
// time left of p.Block and by the context's deadline; when a retry falls due earlier, a Go
// timer ends the wait at its due time, because Redis ends a blocking command only on its
// server tick (every 100 ms at the default hz). When the XREAD times out at the end of
// p.Block, Claim returns nothing without running claim.lua again: the caller's next Claim
// starts with it.
func (b *Backend) Claim(ctx context.Context, p *pubsub.ClaimParams) ([]pubsub.Delivery, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return nil, err
	}
	if p.Lease <= 0 {
		return nil, &pubsub.ConfigError{Field: "ClaimParams.Lease", Reason: "must be positive"}
	}
	count := max(p.Count, 1)
	k := b.groupKeys(p.Topic, p.Group)
	end := time.Now().Add(p.Block)
	for {
		res, err := claimScript.Run(ctx, b.client, k.claimKeys(),
			p.Group, p.Consumer, ParkedConsumer, count, backendkit.Millis(p.Lease), max(count, b.opts.BatchSize)).Slice()
		if err != nil {
			return nil, err
		}
		if len(res) > 2 || p.Block <= 0 {
			return deliveries(p.Topic, res[2:]), nil
		}
		wait := time.Until(end)
		if wait <= 0 || ctx.Err() != nil {
			return nil, ctx.Err()
		}
		due := backendkit.Int(res[0])
		if due == 0 {
			continue // the script stopped at its bound or dropped stale retries: go on at once
		}
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		timer := due > 0 && time.Duration(due)*time.Millisecond < wait
		if timer {
			wait = time.Duration(due) * time.Millisecond
		}
		last, _ := res[1].(string)
		woken, err := b.await(ctx, k.topic.stream, last, wait, timer)
		if err != nil {
			return nil, err
		}
		if !woken && !timer && !time.Now().Before(end) {
			// Block is over and nothing came: return without another claim.lua, since the
			// caller's next Claim starts with one (an idle consumer then runs one script
			// per Block, not two).
			return nil, nil
		}
	}
}

// await blocks until the stream gets an entry after last, or wait passes, and reports
// whether an entry came. XREAD BLOCK times out on Redis's server tick, late by up to 1/hz;
// with timer, a Go timer ends the wait on time instead, leaving the XREAD to finish by itself
// (it only reads, and holds a pooled connection for at most wait plus a tick).
func (b *Backend) await(ctx context.Context, stream, last string, wait time.Duration, timer bool) (bool, error) {
	read := func() (bool, error) {
		err := b.client.XRead(ctx, &redis.XReadArgs{
			Streams: []string{stream, last},
			Count:   1,
			Block:   time.Duration(backendkit.Millis(max(wait, time.Millisecond))) * time.Millisecond,
		}).Err()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil, err
	}
	if !timer {
		return read()
	}
	type result struct {
		woken bool
		err   error
	}
	done := make(chan result, 1)
	go func() { w, err := read(); done <- result{w, err} }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case r := <-done:
		return r.woken, r.err
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// deliveries decodes claim.lua's flat {id, attempt, fields, ...} reply. An entry that does
// not decode becomes a Delivery with Err wrapping pubsub.ErrCorruptEntry, for the caller to
// dead-letter.
func deliveries(topic string, flat []any) []pubsub.Delivery {
	return backendkit.DecodeDeliveries(flat, topic, "streams: entry", func(fields any) (pubsub.Envelope, error) {
		return decodeEntry(toStrings(fields))
	})
}
