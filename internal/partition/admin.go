package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
)

// The Admin API of a partitioned topic answers for the topic as a whole: lists and counts add
// up its partitions, a message is named by its partitioned ID, and a pause or a delete reaches
// every partition.

var (
	_ backend.Admin       = (*Backend)(nil)
	_ backend.TopicLister = (*Backend)(nil)
)

// admin is the inner backend's Admin API; ErrNotImplemented when it has none.
func (b *Backend) admin() (backend.Admin, error) {
	a, ok := b.inner.(backend.Admin)
	if !ok {
		return nil, fmt.Errorf("%w: the %s backend has no Admin API", backend.ErrNotImplemented, b.inner.Name())
	}
	return a, nil
}

// outer returns the partitioned topic an inner topic name belongs to: the name itself for an
// unpartitioned topic (which may hold '|' too).
func (b *Backend) outer(ctx context.Context, name string) (string, error) {
	parts := strings.Split(name, "|")
	if len(parts) < 3 {
		return name, nil
	}
	topic := strings.Join(parts[:len(parts)-2], "|")
	i, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || backend.ValidateName("topic", topic) != nil {
		return name, nil
	}
	t, err := b.topics.get(ctx, topic)
	var ce *CountError
	switch {
	case errors.As(err, &ce):
		return name, nil // its count differs from this process's: not a layout of ours
	case err != nil:
		return "", err
	}
	if i >= 0 && i < t.layout.Count() && t.layout.Name(i) == name && !t.single() {
		return topic, nil
	}
	return name, nil
}

// candidates are the topics names may be or belong to: each name, and the topic a partition's
// name would be of.
func candidates(names []string) []string {
	out := slices.Clone(names)
	for _, n := range names {
		if parts := strings.Split(n, "|"); len(parts) >= 3 {
			out = append(out, strings.Join(parts[:len(parts)-2], "|"))
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(n string) bool { return backend.ValidateName("topic", n) != nil })
}

// TopicNames lists the partitioned topics that have a partition in use.
func (b *Backend) TopicNames(ctx context.Context) ([]string, error) {
	tl, ok := b.inner.(backend.TopicLister)
	if !ok {
		return nil, fmt.Errorf("%w: the %s backend cannot list topics", backend.ErrNotImplemented, b.inner.Name())
	}
	names, err := tl.TopicNames(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.topics.prefetch(ctx, candidates(names)); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		t, err := b.outer(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// HasTopic reports whether any partition of topic is in use.
func (b *Backend) HasTopic(ctx context.Context, topic string) (bool, error) {
	tl, ok := b.inner.(backend.TopicLister)
	if !ok {
		return false, fmt.Errorf("%w: the %s backend cannot list topics", backend.ErrNotImplemented, b.inner.Name())
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return false, err
	}
	var mu sync.Mutex
	found := false
	err = each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		ok, err := tl.HasTopic(ctx, t.layout.Name(i))
		mu.Lock()
		found = found || ok
		mu.Unlock()
		return err
	})
	return found, err
}

// ListTopics describes every partitioned topic in use.
func (b *Backend) ListTopics(ctx context.Context) ([]backend.TopicInfo, error) {
	names, err := b.TopicNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]backend.TopicInfo, 0, len(names))
	for _, n := range names {
		ti, err := b.Topic(ctx, n)
		if errors.Is(err, backend.ErrTopicNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ti)
	}
	return out, nil
}

// Topic describes a topic over its partitions: the groups of any, the backlogs added up.
func (b *Backend) Topic(ctx context.Context, topic string) (backend.TopicInfo, error) {
	a, err := b.admin()
	if err != nil {
		return backend.TopicInfo{}, err
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return backend.TopicInfo{}, err
	}
	if t.single() {
		return a.Topic(ctx, topic)
	}
	var mu sync.Mutex
	out, found := backend.TopicInfo{Name: topic}, false
	err = each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		ti, err := a.Topic(ctx, t.layout.Name(i))
		if errors.Is(err, backend.ErrTopicNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		found = true
		out.Groups = append(out.Groups, ti.Groups...)
		out.Backlog += ti.Backlog
		out.BacklogDropped += ti.BacklogDropped
		return nil
	})
	if err != nil {
		return backend.TopicInfo{}, err
	}
	if !found {
		return backend.TopicInfo{}, fmt.Errorf("topic %q: %w", topic, backend.ErrTopicNotFound)
	}
	slices.Sort(out.Groups)
	out.Groups = slices.Compact(out.Groups)
	return out, nil
}

// ListGroups lists the groups of any partition: paused when any partition of it is.
func (b *Backend) ListGroups(ctx context.Context, topic string) ([]backend.GroupInfo, error) {
	a, err := b.admin()
	if err != nil {
		return nil, err
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return nil, err
	}
	if t.single() {
		return a.ListGroups(ctx, topic)
	}
	var mu sync.Mutex
	groups := map[string]*backend.GroupInfo{}
	err = each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		gs, err := a.ListGroups(ctx, t.layout.Name(i))
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, g := range gs {
			have, ok := groups[g.Name]
			if !ok {
				g.Topic = topic
				groups[g.Name] = &g
				continue
			}
			have.Paused = have.Paused || g.Paused
			have.Ephemeral = have.Ephemeral || g.Ephemeral
			if g.Expires.After(have.Expires) {
				have.Expires = g.Expires
			}
		}
		return nil
	})
	out := make([]backend.GroupInfo, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(x, y backend.GroupInfo) int { return strings.Compare(x.Name, y.Name) })
	return out, err
}

// PauseGroup pauses the group on every partition. ErrGroupNotFound when no partition has it.
func (b *Backend) PauseGroup(ctx context.Context, topic, group string) error {
	return b.everyGroup(ctx, topic, group, func(a backend.Admin, ctx context.Context, name string) error {
		return a.PauseGroup(ctx, name, group)
	})
}

// ResumeGroup resumes the group on every partition.
func (b *Backend) ResumeGroup(ctx context.Context, topic, group string) error {
	return b.everyGroup(ctx, topic, group, func(a backend.Admin, ctx context.Context, name string) error {
		return a.ResumeGroup(ctx, name, group)
	})
}

// DeleteGroup deletes the group from every partition, and its share of the partitions.
func (b *Backend) DeleteGroup(ctx context.Context, topic, group string) error {
	err := b.everyGroup(ctx, topic, group, func(a backend.Admin, ctx context.Context, name string) error {
		return a.DeleteGroup(ctx, name, group)
	})
	if err != nil {
		return err
	}
	if n, err := b.topics.count(ctx, topic); err != nil || n == 1 {
		return err
	}
	return b.forgetShares(ctx, topic, group)
}

// forgetShares deletes the assignment keys of the groups named, and their order locks (each in
// its partition's slot, so one DEL each).
func (b *Backend) forgetShares(ctx context.Context, topic string, groups ...string) error {
	if len(groups) == 0 {
		return nil
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return err
	}
	var ks []string
	for _, g := range groups {
		k := GroupAssignKeys(b.cfg.Tag(topic), g)
		ks = append(ks, k.Members, k.Owners, k.Epochs)
	}
	_, err = b.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, ks...)
		for _, g := range groups {
			for i := range t.layout.Count() {
				p.Del(ctx, b.lockKey(t, i, g))
			}
		}
		return nil
	})
	return err
}

// everyGroup runs f on every partition's group, and fails with ErrGroupNotFound only when
// no partition has the group.
func (b *Backend) everyGroup(ctx context.Context, topic, group string, f func(a backend.Admin, ctx context.Context, name string) error) error {
	a, err := b.admin()
	if err != nil {
		return err
	}
	if err := check(topic, group); err != nil {
		return err
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return err
	}
	found, err := onAny(ctx, t, backend.ErrGroupNotFound, func(ctx context.Context, name string) error {
		return f(a, ctx, name)
	})
	if err == nil && !found {
		return fmt.Errorf("group %q of topic %q: %w", group, topic, backend.ErrGroupNotFound)
	}
	return err
}

// DeleteTopic deletes every partition, the groups' shares and the partition record, so that
// the topic may be created again with another count. (A process that used the topic keeps its
// count until it restarts.)
func (b *Backend) DeleteTopic(ctx context.Context, topic string) error {
	a, err := b.admin()
	if err != nil {
		return err
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		return err
	}
	if t.single() {
		b.topics.forget(topic)
		return a.DeleteTopic(ctx, topic)
	}
	groups, err := b.GroupNames(ctx, topic)
	if err != nil {
		return err
	}
	found, err := onAny(ctx, t, backend.ErrTopicNotFound, func(ctx context.Context, name string) error {
		return a.DeleteTopic(ctx, name)
	})
	if err != nil {
		return err
	}
	if err := b.forgetShares(ctx, topic, groups...); err != nil {
		return err
	}
	if t.layout.Count() > 1 {
		if err := b.cfg.Client.Del(ctx, RecordKey(b.cfg.Tag(topic))).Err(); err != nil {
			return err
		}
		b.topics.forget(topic)
	}
	if !found {
		return fmt.Errorf("topic %q: %w", topic, backend.ErrTopicNotFound)
	}
	return nil
}

// onAny runs f on every partition and reports whether any of them had what f acts on: an
// error matching notFound from a partition is no failure, only not found there.
func onAny(ctx context.Context, t *topic, notFound error, f func(ctx context.Context, name string) error) (bool, error) {
	var mu sync.Mutex
	found := false
	err := each(ctx, all(t.layout.Count()), func(ctx context.Context, i int) error {
		err := f(ctx, t.layout.Name(i))
		if errors.Is(err, notFound) {
			return nil
		}
		if err == nil {
			mu.Lock()
			found = true
			mu.Unlock()
		}
		return err
	})
	return found, err
}
