package partition

import (
	"context"
	"errors"
	"maps"
	"slices"
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
// their errors joined.
func each(ctx context.Context, parts []int, f func(ctx context.Context, i int) error) error {
	failed := eachFailed(ctx, parts, f)
	if len(failed) == 0 {
		return nil
	}
	errs := make([]error, 0, len(failed))
	for _, i := range slices.Sorted(maps.Keys(failed)) {
		errs = append(errs, failed[i])
	}
	return errors.Join(errs...)
}

// eachFailed runs f as each does, and returns the error of each partition that failed.
func eachFailed(ctx context.Context, parts []int, f func(ctx context.Context, i int) error) map[int]error {
	if len(parts) == 1 {
		if err := f(ctx, parts[0]); err != nil {
			return map[int]error{parts[0]: err}
		}
		return nil
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed map[int]error
		sem    = make(chan struct{}, fanout)
	)
	for _, i := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ctx, i); err != nil {
				mu.Lock()
				if failed == nil {
					failed = map[int]error{}
				}
				failed[i] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

// partial is the error of a settle call whose partitions in failed did not answer: nil when
// none failed, and otherwise a *backend.PartialError listing the items of the failed
// partitions, so that the caller sends only those again, and later, while the results that
// follow go on to the partitions that answer (even when this call's were all on failed ones).
func partial[T any](items []T, t *topic, id func(T) string, failed map[int]error) error {
	if len(failed) == 0 {
		return nil
	}
	var first error
	for _, i := range slices.Sorted(maps.Keys(failed)) {
		first = failed[i]
		break
	}
	pe := &backend.PartialError{Err: first}
	for j, it := range items {
		if i, _, ok := t.split(id(it)); ok {
			if _, bad := failed[i]; bad {
				pe.Failed = append(pe.Failed, j)
			}
		}
	}
	return pe
}

// without drops the partitions in failed from parts: what a call settled.
func without[T any](parts map[int][]T, failed map[int]error) map[int][]T {
	if len(failed) == 0 {
		return parts
	}
	out := make(map[int][]T, len(parts))
	for i, items := range parts {
		if _, bad := failed[i]; !bad {
			out[i] = items
		}
	}
	return out
}

// all lists the partitions 0..n-1.
func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
