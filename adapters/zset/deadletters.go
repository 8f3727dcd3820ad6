package zset

import (
	"context"
	"slices"
	"time"

	"github.com/relq/relq/pubsub"
)

// deadLettersCountDefault is the page size when DeadLettersParams.Count is zero.
const deadLettersCountDefault = 100

// DeadLetters reads one page of the group's dead letters, oldest first, in one read-only
// script. An entry that cannot be decoded comes back with its bytes in Raw.
func (b *Backend) DeadLetters(ctx context.Context, p *pubsub.DeadLettersParams) ([]pubsub.DeadLetter, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return nil, err
	}
	count := p.Count
	if count <= 0 {
		count = deadLettersCountDefault
	}
	k := b.groupKeys(p.Topic, p.Group)
	flat, err := deadLettersScript.Run(ctx, b.client, k.deadLettersKeys(), max(p.Offset, 0), count).Slice()
	if err != nil {
		return nil, err
	}
	out := make([]pubsub.DeadLetter, 0, len(flat)/5)
	for i := 0; i+4 < len(flat); i += 5 {
		id, _ := flat[i].(string)
		reason, _ := flat[i+2].(string)
		dl := pubsub.DeadLetter{
			ID:       id,
			Topic:    p.Topic,
			Group:    p.Group,
			Reason:   reason,
			Attempts: int(toInt(flat[i+3])),
			DeadAt:   time.UnixMilli(toInt(flat[i+1])),
		}
		if body, ok := flat[i+4].(string); ok {
			if env, err := pubsub.DecodeEnvelope([]byte(body)); err == nil {
				dl.Envelope = env
			} else {
				dl.Raw = []byte(body)
			}
		}
		out = append(out, dl)
	}
	return out, nil
}

// RequeueDeadLetters moves the given dead letters (or all, with p.All) back to ready, due now
// (behind what is already due) with their priority, and attempts reset, in requeue.lua calls
// of at most Options.BatchSize ids each. Each call is atomic; a large requeue is several. IDs
// that are not dead letters are skipped.
func (b *Backend) RequeueDeadLetters(ctx context.Context, p *pubsub.RequeueParams) (int, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return 0, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	batch := b.opts.BatchSize
	total := 0
	if p.All {
		for {
			n, err := toInts(requeueScript.Run(ctx, b.client, k.requeueKeys(), batch).Slice())
			if err != nil {
				return total, err
			}
			total += int(n[1])
			if n[0] < int64(batch) {
				return total, nil
			}
		}
	}
	for ids := range slices.Chunk(p.IDs, batch) {
		args := make([]any, 0, 1+len(ids))
		args = append(args, batch)
		for _, id := range ids {
			args = append(args, id)
		}
		n, err := toInts(requeueScript.Run(ctx, b.client, k.requeueKeys(), args...).Slice())
		if err != nil {
			return total, err
		}
		total += int(n[1])
	}
	return total, nil
}

// PurgeDeadLetters deletes all the group's dead letters, in purge.lua calls of at most
// Options.BatchSize each; a body goes with the last group that held it.
func (b *Backend) PurgeDeadLetters(ctx context.Context, p *pubsub.PurgeParams) (int, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return 0, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	total := 0
	for {
		n, err := purgeScript.Run(ctx, b.client, k.purgeKeys(), b.opts.BatchSize).Int()
		if err != nil {
			return total, err
		}
		total += n
		if n < b.opts.BatchSize {
			return total, nil
		}
	}
}
