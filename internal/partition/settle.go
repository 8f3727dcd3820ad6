package partition

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/relq/relq/backend"
)

func heldID(h backend.Held) string             { return h.ID }
func setHeldID(h *backend.Held, id string)     { h.ID = id }
func nackID(n backend.NackItem) string         { return n.ID }
func setNackID(n *backend.NackItem, id string) { n.ID = id }

// Ack acks each delivery in its partition. An ID that names no partition holds nothing and
// counts as stale, as an unknown ID does.
func (b *Backend) Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error) {
	t, err := b.settling(ctx, p.Topic, p.Group, p.Consumer, len(p.Items))
	if err != nil || t == nil {
		return backend.AckResult{}, err
	}
	k := memberKey{p.Topic, p.Group, p.Consumer}
	if t.single() && b.ordered(k, false) == nil {
		return b.inner.Ack(ctx, p)
	}
	parts, rest := byPartition(p.Items, t, heldID, setHeldID)
	var mu sync.Mutex
	res := backend.AckResult{Stale: len(rest)}
	todo, failed := keysOf(parts), map[int]error(nil)
	if b.cfg.QueueAck != nil && len(todo) > 1 {
		todo, failed = b.queueAck(ctx, t, p, parts, todo, &res)
	}
	for i, err := range eachFailed(ctx, todo, func(ctx context.Context, i int) error {
		r, err := b.inner.Ack(ctx, &backend.AckParams{Topic: t.layout.Name(i), Group: p.Group, Consumer: p.Consumer, Items: parts[i]})
		mu.Lock()
		defer mu.Unlock()
		res.Acked += r.Acked
		res.Stale += r.Stale
		return err
	}) {
		if failed == nil {
			failed = map[int]error{}
		}
		failed[i] = err
	}
	b.settledOrdered(ctx, t, k, settledIDs(without(parts, failed), heldID))
	return res, partial(p.Items, t, heldID, failed)
}

// queueAck acks the parts listed in todo on one pipeline (Config.QueueAck), adding their
// counts to res, and returns the parts left for the inner Ack (those it cannot queue, and
// those whose attempt acked nothing) and the errors of those that failed.
func (b *Backend) queueAck(ctx context.Context, t *topic, p *backend.AckParams, parts map[int][]backend.Held, todo []int, res *backend.AckResult) (left []int, failed map[int]error) {
	pipe := b.cfg.Client.Pipeline()
	queued := make(map[int]func() (backend.AckResult, bool, error), len(todo))
	for _, i := range todo {
		done, ok := b.cfg.QueueAck(ctx, pipe, &backend.AckParams{Topic: t.layout.Name(i), Group: p.Group, Consumer: p.Consumer, Items: parts[i]})
		if !ok {
			left = append(left, i)
			continue
		}
		queued[i] = done
	}
	if len(queued) > 0 {
		_, _ = pipe.Exec(ctx) // each command's own error is read by its done
	}
	for _, i := range todo {
		done, ok := queued[i]
		if !ok {
			continue
		}
		r, again, err := done()
		switch {
		case err != nil:
			if failed == nil {
				failed = map[int]error{}
			}
			failed[i] = err
		case again:
			left = append(left, i)
		default:
			res.Acked += r.Acked
			res.Stale += r.Stale
		}
	}
	return left, failed
}

// settledIDs lists the inner IDs a call carried, by partition: an ordered delivery among them
// is settled by it.
func settledIDs[T any](parts map[int][]T, id func(T) string) map[int][]string {
	out := make(map[int][]string, len(parts))
	for i, items := range parts {
		for _, it := range items {
			out[i] = append(out[i], id(it))
		}
	}
	return out
}

// Nack nacks each delivery in its partition; IDs that name none are stale. An ordered
// delivery's retry keeps its place, and a delay gates its partition instead (see order.go).
func (b *Backend) Nack(ctx context.Context, p *backend.NackParams) (backend.NackResult, error) {
	t, err := b.settling(ctx, p.Topic, p.Group, p.Consumer, len(p.Items))
	if err != nil || t == nil {
		return backend.NackResult{}, err
	}
	k := memberKey{p.Topic, p.Group, p.Consumer}
	if t.single() && b.ordered(k, false) == nil {
		return b.inner.Nack(ctx, p)
	}
	parts, rest := byPartition(p.Items, t, nackID, setNackID)
	var mu sync.Mutex
	var requeued []int
	res := backend.NackResult{Stale: len(rest)}
	failed := eachFailed(ctx, keysOf(parts), func(ctx context.Context, i int) error {
		items := parts[i]
		if id := b.inflightOf(k, i); id != "" {
			items = slices.Clone(items)
			for j := range items {
				it := items[j]
				dies := it.DeadLetter || (p.MaxDeliveries > 0 && it.Attempt >= p.MaxDeliveries)
				if it.ID != id || it.Delay <= 0 || it.Release || dies {
					continue
				}
				// Gated before the nack, so that a nack whose reply is lost, and its resend
				// (stale then), still leave the retry waiting out its delay.
				if err := b.gate(ctx, t, k, i, it.Delay); err != nil {
					return err
				}
				items[j].Delay = 0 // back in its place; the gate makes it wait
			}
		}
		r, err := b.inner.Nack(ctx, &backend.NackParams{
			Topic: t.layout.Name(i), Group: p.Group, Consumer: p.Consumer,
			Items: items, MaxDeliveries: p.MaxDeliveries,
		})
		mu.Lock()
		defer mu.Unlock()
		if r.Requeued > 0 {
			requeued = append(requeued, i)
		}
		res.Requeued += r.Requeued
		res.DeadLettered += r.DeadLettered
		res.Stale += r.Stale
		return err
	})
	b.settledOrdered(ctx, t, k, settledIDs(without(parts, failed), nackID))
	if res.Requeued > 0 && !t.single() {
		now, due := readiness(p.Items, func(n backend.NackItem) time.Duration {
			if n.DeadLetter {
				return -1
			}
			return n.Delay
		})
		slices.Sort(requeued)
		b.bells.ring(ctx, b.cfg.Tag(p.Topic), requeued, now, due)
	}
	return res, partial(p.Items, t, nackID, failed)
}

// Extend extends each lease in its partition and keeps the consumer's share of the group: a
// subscription busy with what it holds claims nothing, and its heartbeat is what keeps its
// partitions. IDs that name no partition are lost, and so are ordered deliveries whose
// partition's lock the consumer lost.
func (b *Backend) Extend(ctx context.Context, p *backend.ExtendParams) ([]string, error) {
	if p.Lease <= 0 {
		return nil, &backend.ConfigError{Field: "ExtendParams.Lease", Reason: "must be positive"}
	}
	t, err := b.settling(ctx, p.Topic, p.Group, p.Consumer, len(p.Items))
	if err != nil || t == nil {
		return nil, err
	}
	k := memberKey{p.Topic, p.Group, p.Consumer}
	if t.single() && b.ordered(k, false) == nil {
		return b.inner.Extend(ctx, p)
	}
	if m := b.lookup(k); m != nil {
		if _, err := b.sync(ctx, m, p.Lease); err != nil {
			return nil, err
		}
	}
	parts, rest := byPartition(p.Items, t, heldID, setHeldID)
	var lost []string
	for _, h := range rest {
		lost = append(lost, h.ID)
	}
	gone, err := b.renewOrdered(ctx, t, k, parts, p.Lease)
	if err != nil {
		return nil, err
	}
	if gone == nil {
		gone = map[int][]string{}
	}
	for i, ids := range gone {
		for _, id := range ids {
			lost = append(lost, t.outer(i, id))
		}
		parts[i] = slices.DeleteFunc(parts[i], func(h backend.Held) bool { return slices.Contains(ids, h.ID) })
	}
	var mu sync.Mutex
	err = each(ctx, keysOf(parts), func(ctx context.Context, i int) error {
		if len(parts[i]) == 0 {
			return nil
		}
		l, err := b.inner.Extend(ctx, &backend.ExtendParams{Topic: t.layout.Name(i), Group: p.Group, Consumer: p.Consumer, Items: parts[i], Lease: p.Lease})
		mu.Lock()
		defer mu.Unlock()
		for _, id := range l {
			lost = append(lost, t.outer(i, id))
		}
		if len(l) > 0 {
			gone[i] = append(gone[i], l...) // the subscription drops them: nothing settles them
		}
		return err
	})
	b.settledOrdered(ctx, t, k, gone)
	return lost, err
}

// settling validates a settle call's names and returns its topic; nil with nothing to do.
func (b *Backend) settling(ctx context.Context, topic, group, consumer string, n int) (*topic, error) {
	if err := check(topic, group); err != nil {
		return nil, err
	}
	if err := backend.ValidateName("consumer", consumer); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return b.topics.get(ctx, topic)
}

// Reclaim reclaims the partitions this process's consumers of the group own, or every
// partition when it has none (an operator's tool): a partition nobody owns has nobody to
// claim it either, and its first owner reclaims it.
func (b *Backend) Reclaim(ctx context.Context, p *backend.ReclaimParams) (backend.ReclaimResult, error) {
	if err := check(p.Topic, p.Group); err != nil {
		return backend.ReclaimResult{}, err
	}
	t, err := b.topics.get(ctx, p.Topic)
	if err != nil {
		return backend.ReclaimResult{}, err
	}
	if t.single() {
		return b.inner.Reclaim(ctx, p)
	}
	parts := b.local(p.Topic, p.Group)
	if parts == nil {
		parts = all(t.layout.Count())
	}
	var mu sync.Mutex
	var res backend.ReclaimResult
	var readied []int
	err = each(ctx, parts, func(ctx context.Context, i int) error {
		q := *p
		q.Topic = t.layout.Name(i)
		r, err := b.inner.Reclaim(ctx, &q)
		mu.Lock()
		defer mu.Unlock()
		if r.Reclaimed+r.Promoted+r.Orphans > 0 {
			readied = append(readied, i)
		}
		res.Reclaimed += r.Reclaimed
		res.DeadLettered += r.DeadLettered
		res.Orphans += r.Orphans
		res.Promoted += r.Promoted
		res.Removed += r.Removed
		if r.NextExpiry > 0 && (res.NextExpiry == 0 || r.NextExpiry < res.NextExpiry) {
			res.NextExpiry = r.NextExpiry
		}
		return err
	})
	if len(readied) > 0 {
		slices.Sort(readied)
		b.bells.ring(ctx, b.cfg.Tag(p.Topic), readied, true, 0)
	}
	return res, err
}
