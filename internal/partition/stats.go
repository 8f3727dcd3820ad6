package partition

import (
	"context"
	"slices"
	"sync"

	"github.com/relq/relq/backend"
)

// GroupNames lists the groups registered on any partition of the topic.
func (b *Backend) GroupNames(ctx context.Context, topic string) ([]string, error) {
	if err := backend.ValidateName("topic", topic); err != nil {
		return nil, err
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return nil, err
	}
	var (
		mu    sync.Mutex
		names []string
	)
	err = each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		gs, err := b.inner.GroupNames(ctx, t.layout.Name(i))
		mu.Lock()
		defer mu.Unlock()
		names = append(names, gs...)
		return err
	})
	slices.Sort(names)
	return slices.Compact(names), err
}

// Stats adds up the group's state over every partition: counts and counters are sums, ages
// the oldest, and the group is paused when any partition is.
func (b *Backend) Stats(ctx context.Context, p *backend.StatsParams) (backend.Stats, error) {
	if err := check(p.Topic, p.Group); err != nil {
		return backend.Stats{}, err
	}
	t, err := b.topics.get(ctx, p.Topic)
	if err != nil {
		return backend.Stats{}, err
	}
	if t.single() {
		return b.inner.Stats(ctx, p)
	}
	var mu sync.Mutex
	out := backend.Stats{Topic: p.Topic, Group: p.Group}
	err = each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		s, err := b.inner.Stats(ctx, &backend.StatsParams{Topic: t.layout.Name(i), Group: p.Group})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		add(&out, s)
		return nil
	})
	return out, err
}

// add adds one partition's stats to the topic's.
func add(to *backend.Stats, s backend.Stats) {
	to.Ready += s.Ready
	to.Delayed += s.Delayed
	to.Pending += s.Pending
	to.Dead += s.Dead
	to.OldestPendingAge = max(to.OldestPendingAge, s.OldestPendingAge)
	to.OldestReadyAge = max(to.OldestReadyAge, s.OldestReadyAge)
	to.Paused = to.Paused || s.Paused
	if s.ReregisteredAt.After(to.ReregisteredAt) {
		to.ReregisteredAt = s.ReregisteredAt
	}
	c, d := &to.Counters, s.Counters
	c.Published += d.Published
	c.Claimed += d.Claimed
	c.Acked += d.Acked
	c.Nacked += d.Nacked
	c.Reclaimed += d.Reclaimed
	c.DeadLettered += d.DeadLettered
	c.StaleAcks += d.StaleAcks
	c.StaleNacks += d.StaleNacks
	c.Reregistered = max(c.Reregistered, d.Reregistered)
}
