package partition

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/relq/relq/backend"
)

var (
	_ backend.Ephemeral      = (*Backend)(nil)
	_ backend.ReplicaWaiter  = (*Backend)(nil)
	_ backend.EvictionReader = (*Backend)(nil)
)

// Join makes consumer a member of the ephemeral group on every partition.
func (b *Backend) Join(ctx context.Context, p *backend.JoinParams) error {
	e, ok := b.inner.(backend.Ephemeral)
	if !ok {
		return fmt.Errorf("%w: the %s backend has no ephemeral groups", backend.ErrNotImplemented, b.inner.Name())
	}
	t, err := b.topics.create(ctx, p.Topic)
	if err != nil {
		return err
	}
	return each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		q := *p
		q.Topic = t.layout.Name(i)
		return e.Join(ctx, &q)
	})
}

// Leave ends consumer's membership of the ephemeral group on every partition: the last
// member's Leave deletes the group's partitions, and its share of them.
func (b *Backend) Leave(ctx context.Context, p *backend.LeaveParams) error {
	e, ok := b.inner.(backend.Ephemeral)
	if !ok {
		return fmt.Errorf("%w: the %s backend has no ephemeral groups", backend.ErrNotImplemented, b.inner.Name())
	}
	t, err := b.topics.get(ctx, p.Topic)
	if err != nil {
		return err
	}
	return each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		q := *p
		q.Topic = t.layout.Name(i)
		return e.Leave(ctx, &q)
	})
}

// WaitReplicas waits for the replicas of every partition's primary, and returns the fewest
// that acknowledged any of them.
func (b *Backend) WaitReplicas(ctx context.Context, topic string, replicas int, timeout time.Duration) (int, error) {
	w, ok := b.inner.(backend.ReplicaWaiter)
	if !ok {
		return 0, fmt.Errorf("%w: the %s backend cannot wait for replicas", backend.ErrNotImplemented, b.inner.Name())
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return 0, err
	}
	var mu sync.Mutex
	fewest := -1
	err = each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		n, err := w.WaitReplicas(ctx, t.layout.Name(i), replicas, timeout)
		mu.Lock()
		defer mu.Unlock()
		if fewest < 0 || n < fewest {
			fewest = n
		}
		return err
	})
	return max(fewest, 0), err
}

// Eviction is the inner backend's.
func (b *Backend) Eviction(ctx context.Context) (backend.Eviction, error) {
	r, ok := b.inner.(backend.EvictionReader)
	if !ok {
		return backend.Eviction{}, fmt.Errorf("%w: the %s backend cannot read the eviction policy", backend.ErrNotImplemented, b.inner.Name())
	}
	return r.Eviction(ctx)
}
