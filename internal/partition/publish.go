package partition

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/relq/relq/backend"
)

// Publish splits the batch by partition and publishes the parts: with an inner backend that
// can queue its publish (Config.Queue), on one pipeline, which the client sends to each
// primary in one round trip, a part whose attempt needs more (a registry to learn, a script
// to load) then published alone; otherwise concurrently, each in the inner backend's one
// round trip. It returns nil only once every part is stored; when a part fails the others
// may be stored, and a retry of the same batch sends every message to the partition it went
// to before, where the inner backend's own publish rules apply.
func (b *Backend) Publish(ctx context.Context, p *backend.PublishParams) (backend.PublishResult, error) {
	if len(p.Messages) == 0 {
		_, err := b.topics.get(ctx, p.Topic)
		return backend.PublishResult{}, err
	}
	t, err := b.topics.create(ctx, p.Topic)
	if err != nil {
		return backend.PublishResult{}, err
	}
	if t.single() {
		return b.inner.Publish(ctx, p)
	}
	l := t.layout
	where := make([]int, len(p.Messages))
	parts := map[int][]backend.OutMessage{}
	for j, m := range p.Messages {
		i := l.ForKey(messageKey(m.Envelope))
		where[j] = i
		parts[i] = append(parts[i], m)
	}
	var (
		mu  sync.Mutex
		res = backend.PublishResult{IDs: make([]string, len(p.Messages))}
		ids = map[int][]string{}
	)
	todo := keysOf(parts)
	if b.cfg.Queue != nil && len(todo) > 1 {
		var queued map[int]backend.PublishResult
		queued, todo, err = b.queuePublish(ctx, l, parts, todo)
		for i, r := range queued {
			res.BacklogDropped += r.BacklogDropped
			ids[i] = r.IDs
		}
	}
	err = cmp.Or(err, each(ctx, todo, func(ctx context.Context, i int) error {
		r, err := b.inner.Publish(ctx, &backend.PublishParams{Topic: l.Name(i), Messages: parts[i]})
		mu.Lock()
		defer mu.Unlock()
		res.BacklogDropped += r.BacklogDropped
		for _, g := range r.Reregistered {
			if !slices.Contains(res.Reregistered, g) {
				res.Reregistered = append(res.Reregistered, g)
			}
		}
		ids[i] = r.IDs
		return err
	}))
	slices.Sort(res.Reregistered)
	if err != nil {
		var full *backend.BacklogFullError
		if errors.As(err, &full) {
			full.Topic = p.Topic // the topic the caller knows
		}
		return res, err
	}
	next := map[int]int{}
	for j, i := range where {
		res.IDs[j] = OuterID(i, ids[i][next[i]])
		next[i]++
	}
	now, due := readiness(p.Messages, func(m backend.OutMessage) time.Duration { return m.Delay })
	b.bells.ring(ctx, b.cfg.Tag(p.Topic), keysOf(parts), now, due)
	return res, nil
}

// queuePublish publishes the parts listed in todo on one pipeline, and returns the results
// of those stored and the parts left for the inner Publish (their attempt stored nothing).
// The error is the first part's that failed; the others' results are returned all the same.
func (b *Backend) queuePublish(ctx context.Context, l *Layout, parts map[int][]backend.OutMessage, todo []int) (map[int]backend.PublishResult, []int, error) {
	pipe := b.cfg.Client.Pipeline()
	dones := make([]func() (backend.PublishResult, bool, error), len(todo))
	for k, i := range todo {
		dones[k] = b.cfg.Queue(ctx, pipe, &backend.PublishParams{Topic: l.Name(i), Messages: parts[i]})
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read by its done
	var (
		stored = make(map[int]backend.PublishResult, len(todo))
		again  []int
		first  error
	)
	for k, i := range todo {
		r, retry, err := dones[k]()
		switch {
		case err != nil:
			first = cmp.Or(first, err)
		case retry:
			again = append(again, i)
		default:
			stored[i] = r
		}
	}
	return stored, again, first
}

// readiness reports whether any item is ready now, and the earliest positive delay.
func readiness[T any](items []T, delay func(T) time.Duration) (now bool, due time.Duration) {
	for _, it := range items {
		switch d := delay(it); {
		case d <= 0:
			now = true
		case due == 0 || d < due:
			due = d
		}
	}
	return now, due
}

// messageKey is the key a message is routed by: its partition key, else its UUID, so that
// messages without a key spread evenly and a retried publish of the same batch sends each
// where the first try did.
func messageKey(e backend.Envelope) string {
	if k, ok := e.Metadata[backend.MetadataKey]; ok {
		return k
	}
	return e.UUID
}

func keysOf[T any](m map[int]T) []int {
	out := make([]int, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// EnsureGroup registers the group on every partition.
func (b *Backend) EnsureGroup(ctx context.Context, p *backend.EnsureGroupParams) error {
	t, err := b.topics.create(ctx, p.Topic)
	if err != nil {
		return err
	}
	return each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		q := *p
		q.Topic = t.layout.Name(i)
		return b.inner.EnsureGroup(ctx, &q)
	})
}

// RegisterAgain registers the group again on every partition where it vanished, each after
// the last delivery this process claimed from it.
func (b *Backend) RegisterAgain(ctx context.Context, p *backend.RegisterAgainParams) (backend.RegisterAgainResult, error) {
	t, err := b.topics.create(ctx, p.Topic)
	if err != nil {
		return backend.RegisterAgainResult{}, err
	}
	if t.single() {
		return b.inner.RegisterAgain(ctx, p)
	}
	if err := check(p.Topic, p.Group); err != nil {
		return backend.RegisterAgainResult{}, err
	}
	var (
		mu  sync.Mutex
		res backend.RegisterAgainResult
	)
	err = each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		q := *p
		q.Topic = t.layout.Name(i)
		q.After = t.last(p.Group, i)
		r, err := b.inner.RegisterAgain(ctx, &q)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		res.Registered = res.Registered || r.Registered
		res.Backlog += r.Backlog
		if r.Times > res.Times {
			res.Times = r.Times
		}
		if r.At.After(res.At) {
			res.At = r.At
		}
		if r.Registered || res.Found == "" {
			res.Found = r.Found
		}
		return nil
	})
	return res, err
}
