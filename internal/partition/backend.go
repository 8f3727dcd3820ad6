package partition

import (
	"context"
	"errors"
	"sync"

	"github.com/relq/relq/backend"
)

// fanout bounds the calls one method sends to the partitions at a time: with the claims,
// which go one partition at a time, it bounds the connections a partitioned topic takes from
// the client's pool whatever its count.
const fanout = 8

// Backend keeps the delivery contract on partitioned topics by spreading each over the inner
// backend's topics that hold its partitions. Publish routes every message by its key; the
// consumers of a group share the partitions (Sync), each claiming from its own; acks, nacks
// and lease extensions reach a delivery's partition through its ID.
type Backend struct {
	inner   backend.Backend
	cfg     Config
	topics  topics
	members members
	bells   bells
	orders  orders
}

var _ backend.Backend = (*Backend)(nil)

// Wrap returns a Backend that lays every topic out over cfg.Partitions(topic) partitions of
// inner's topics.
func Wrap(inner backend.Backend, cfg Config) (*Backend, error) {
	if inner == nil || cfg.Client == nil || cfg.Tag == nil || cfg.InUse == nil || cfg.Partitions == nil {
		return nil, &backend.ConfigError{Field: "partition.Config", Reason: "needs the inner backend, Client, Tag, InUse and Partitions"}
	}
	b := &Backend{inner: inner, cfg: cfg}
	b.topics.cfg = cfg
	b.bells.client = cfg.Client
	return b, nil
}

// Name is the inner backend's.
func (b *Backend) Name() string { return b.inner.Name() }

// Capabilities are the inner backend's, Partitioned: its orders hold within a partition (among
// the messages of one key).
func (b *Backend) Capabilities() backend.Capabilities {
	c := b.inner.Capabilities()
	c.Partitioned = true
	return c
}

// each runs f for partitions 0..n-1 (or those listed), at most fanout at a time, and returns
// the first error.
func each(ctx context.Context, parts []int, f func(ctx context.Context, i int) error) error {
	if len(parts) == 1 {
		return f(ctx, parts[0])
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, fanout)
	)
	for _, i := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ctx, i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

// all lists the partitions 0..n-1.
func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
