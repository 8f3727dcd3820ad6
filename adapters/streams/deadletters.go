package streams

import (
	"context"
	"slices"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// deadHeader is the number of strings of relq's record at the head of a dead-letter entry:
// six fields and their values, before the dead entry's own fields.
const deadHeader = 12

// DeadLetters reads one page of the group's dead-letter stream, oldest first, in one
// read-only script: the page's entry IDs by rank from the group's dead_order index, then the
// stream from the first of them to the last, so a page costs O(Count + log N) at any Offset.
// An entry that cannot be decoded comes back with its bytes in Raw.
func (b *Backend) DeadLetters(ctx context.Context, p *backend.DeadLettersParams) ([]backend.DeadLetter, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return nil, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	page, err := deadLettersScript.Run(ctx, b.client, k.deadLettersKeys(),
		max(p.Offset, 0), backendkit.DeadLettersCount(p.Count)).Slice()
	if err != nil {
		return nil, err
	}
	out := make([]backend.DeadLetter, 0, len(page))
	for _, v := range page {
		f := toStrings(v)
		if len(f) < deadHeader {
			continue
		}
		dl := backend.DeadLetter{
			ID:       f[1],
			Reason:   f[3],
			Attempts: int(backendkit.Int(f[5])),
			DeadAt:   time.UnixMilli(backendkit.Int(f[7])),
			Topic:    f[9],
			Group:    f[11],
		}
		if fields := f[deadHeader:]; len(fields) > 0 {
			if env, err := decodeEntry(fields); err == nil {
				dl.Envelope = env
			} else {
				dl.Raw = rawOf(fields)
			}
		}
		out = append(out, dl)
	}
	return out, nil
}

// RequeueDeadLetters gives the given dead letters (or all, with p.All) back to the group with
// their attempts reset and their delivery IDs kept: each entry returns to the group's PEL
// under the parking consumer with delivery count 0 (XCLAIM ... RETRYCOUNT 0 FORCE), due now.
// It runs requeue.lua calls of at most Options.BatchSize each; each call is atomic. IDs that
// are not dead letters are skipped, and so are dead letters whose entry was trimmed from the
// stream: they stay in the dead-letter stream. Params that p.Validate refuses requeue nothing.
func (b *Backend) RequeueDeadLetters(ctx context.Context, p *backend.RequeueParams) (int, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return 0, err
	}
	if err := p.Validate(); err != nil {
		return 0, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	batch := b.opts.BatchSize
	total := 0
	if p.All {
		cursor := "-"
		for {
			res, err := requeueScript.Run(ctx, b.client, k.requeueKeys(), p.Group, ParkedConsumer, batch, cursor).Slice()
			if err != nil {
				return total, err
			}
			total += int(backendkit.Int(res[1]))
			if backendkit.Int(res[0]) < int64(batch) {
				return total, nil
			}
			cursor, _ = res[2].(string)
		}
	}
	for ids := range slices.Chunk(p.IDs, batch) {
		args := make([]any, 0, 4+len(ids))
		args = append(args, p.Group, ParkedConsumer, batch, "-")
		for _, id := range ids {
			args = append(args, id)
		}
		res, err := requeueScript.Run(ctx, b.client, k.requeueKeys(), args...).Slice()
		if err != nil {
			return total, err
		}
		total += int(backendkit.Int(res[1]))
	}
	return total, nil
}

// PurgeDeadLetters deletes the group's dead letters given by p.IDs, or with p.All the oldest
// (at most p.Limit when it is positive), in purge.lua calls of at most Options.BatchSize each,
// each atomic. IDs that are not dead letters of the group are skipped. With DeleteOnAck,
// entries no other group needs go too.
func (b *Backend) PurgeDeadLetters(ctx context.Context, p *backend.PurgeParams) (int, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return 0, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Purge(ctx, b.client, purgeScript, k.purgeKeys(), b.opts.BatchSize, p, b.deleteOnAck())
}
