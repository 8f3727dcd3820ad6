package partition

import (
	"context"
	"slices"
	"sync"

	"github.com/relq/relq/backend"
)

// deadLettersDefault is the page a zero DeadLettersParams.Count reads, as in the backends.
const deadLettersDefault = 100

// DeadLetters lists the group's dead letters over every partition, oldest first (by when they
// died, then partition and ID). It reads Offset+Count letters from each partition, so deep
// pages cost in proportion to their depth.
func (b *Backend) DeadLetters(ctx context.Context, p *backend.DeadLettersParams) ([]backend.DeadLetter, error) {
	if err := check(p.Topic, p.Group); err != nil {
		return nil, err
	}
	t, err := b.topics.get(ctx, p.Topic)
	if err != nil {
		return nil, err
	}
	if t.single() {
		return b.inner.DeadLetters(ctx, p)
	}
	count := p.Count
	if count <= 0 {
		count = deadLettersDefault
	}
	want := max(p.Offset, 0) + count
	var (
		mu  sync.Mutex
		out []backend.DeadLetter
	)
	err = each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		var got []backend.DeadLetter
		for len(got) < want {
			page, err := b.inner.DeadLetters(ctx, &backend.DeadLettersParams{
				Topic: t.layout.Name(i), Group: p.Group, Offset: len(got), Count: want - len(got),
			})
			if err != nil {
				return err
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
		}
		for j := range got {
			got[j].ID = OuterID(i, got[j].ID)
			got[j].Topic = p.Topic
		}
		mu.Lock()
		defer mu.Unlock()
		out = append(out, got...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b backend.DeadLetter) int {
		if c := a.DeadAt.Compare(b.DeadAt); c != 0 {
			return c
		}
		ai, _, _ := SplitID(a.ID, t.layout.Count())
		bi, _, _ := SplitID(b.ID, t.layout.Count())
		return ai - bi
	})
	from := min(max(p.Offset, 0), len(out))
	return out[from:min(from+count, len(out))], nil
}

// RequeueDeadLetters requeues the IDs given in their partitions, or with All every partition's.
func (b *Backend) RequeueDeadLetters(ctx context.Context, p *backend.RequeueParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if b.single(ctx, p.Topic) {
		return b.inner.RequeueDeadLetters(ctx, p)
	}
	n, err := b.selectDead(ctx, p.Topic, p.Group, p.IDs, p.All, func(ctx context.Context, topic string, ids []string) (int, error) {
		return b.inner.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: p.Group, IDs: ids, All: ids == nil})
	})
	if n > 0 {
		b.bells.ring(ctx, b.cfg.Tag(p.Topic), nil, true, 0)
	}
	return n, err
}

// PurgeDeadLetters deletes the IDs given in their partitions, or with All every partition's
// (with a Limit, the oldest Limit of the whole topic).
func (b *Backend) PurgeDeadLetters(ctx context.Context, p *backend.PurgeParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if b.single(ctx, p.Topic) {
		return b.inner.PurgeDeadLetters(ctx, p)
	}
	ids := p.IDs
	if p.All && p.Limit > 0 {
		// The oldest Limit across partitions, by ID: each partition purges exactly those.
		letters, err := b.DeadLetters(ctx, &backend.DeadLettersParams{Topic: p.Topic, Group: p.Group, Count: p.Limit})
		if err != nil {
			return 0, err
		}
		if len(letters) == 0 {
			return 0, nil
		}
		for _, l := range letters {
			ids = append(ids, l.ID)
		}
	}
	return b.selectDead(ctx, p.Topic, p.Group, ids, ids == nil, func(ctx context.Context, topic string, ids []string) (int, error) {
		return b.inner.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: p.Group, IDs: ids, All: ids == nil})
	})
}

// selectDead runs f on each partition named by ids (with their inner IDs), or on every
// partition with nil IDs when allOf, and sums what it returns.
func (b *Backend) selectDead(ctx context.Context, topic, group string, ids []string, allOf bool,
	f func(ctx context.Context, topic string, ids []string) (int, error)) (int, error) {
	if err := check(topic, group); err != nil {
		return 0, err
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return 0, err
	}
	var parts map[int][]string
	if allOf {
		parts = map[int][]string{}
		for _, i := range all(t.layout.Count()) {
			parts[i] = nil
		}
	} else {
		parts, _ = byPartition(ids, t, func(s string) string { return s }, func(s *string, id string) { *s = id })
	}
	var (
		mu    sync.Mutex
		total int
	)
	err = each(ctx, keysOf(parts), func(ctx context.Context, i int) error {
		n, err := f(ctx, t.layout.Name(i), parts[i])
		mu.Lock()
		total += n
		mu.Unlock()
		return err
	})
	return total, err
}

// single reports a valid topic of one partition, which the inner backend serves as it is. On
// any error it reports false, and the partitioned path meets the error again.
func (b *Backend) single(ctx context.Context, topic string) bool {
	if backend.ValidateName("topic", topic) != nil {
		return false
	}
	n, err := b.topics.count(ctx, topic)
	return err == nil && n == 1
}
