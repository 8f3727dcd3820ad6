package partition

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/keys"
)

// Config places a backend's partitioned topics.
type Config struct {
	// Client reaches the Redis (or Cluster) the inner backend uses.
	Client redis.UniversalClient
	// Tag is the hash tag the inner backend gives a topic's keys.
	Tag TagFunc
	// InUse is a key, under the topic's tag, that exists while the inner backend holds the
	// topic unpartitioned (its meta key): a topic in use that way cannot be partitioned.
	InUse func(topic string) string
	// Partitions is the partition count configured for a topic, 1 to MaxCount, or 0 to take
	// the count recorded in Redis when the topic was created (1 when none is).
	Partitions func(topic string) int
}

// NativeConfig is the Config of relq's adapters in their native key format: a topic's keys
// carry the tag {prefix:topic} and its meta key shows it in use; every topic has p partitions.
func NativeConfig(client redis.UniversalClient, prefix string, p int) Config {
	tag := func(topic string) string { return keys.Tag(prefix, topic) }
	return Config{
		Client:     client,
		Tag:        tag,
		InUse:      func(topic string) string { return keys.Join(tag(topic), "meta") },
		Partitions: func(string) int { return p },
	}
}

// topic is what a process knows of one partitioned topic: its layout, once Redis agreed to it.
type topic struct {
	layout *Layout
	// recorded: this process made sure Redis records the topic's count (create).
	recorded bool
	// expires, when set, is when a count read from Redis for a topic not yet created is read
	// again: until its first write, someone may still create it with partitions.
	expires time.Time
	// lastMu guards lasts: per group, the last delivery ID this process claimed from each
	// partition, where RegisterAgain starts a group that vanished.
	lastMu sync.Mutex
	lasts  map[string][]string
}

// seen notes the last delivery claimed from partition i for group.
func (t *topic) seen(group string, i int, id string) {
	t.lastMu.Lock()
	defer t.lastMu.Unlock()
	if t.lasts == nil {
		t.lasts = map[string][]string{}
	}
	l := t.lasts[group]
	if l == nil {
		l = make([]string, t.layout.Count())
		t.lasts[group] = l
	}
	l[i] = id
}

// last is the last delivery claimed from partition i for group, "" for none.
func (t *topic) last(group string, i int) string {
	t.lastMu.Lock()
	defer t.lastMu.Unlock()
	if l := t.lasts[group]; l != nil {
		return l[i]
	}
	return ""
}

// topics caches the layouts of the topics a Backend met. A topic's count is checked against
// Redis once per process: the record is written once and never changes.
type topics struct {
	cfg Config
	mu  sync.Mutex
	m   map[string]*topic
}

// get returns topic's layout for a call that reads the topic: it checks the count recorded in
// Redis, if any, at the first use in this process, and writes none.
func (ts *topics) get(ctx context.Context, name string) (*topic, error) {
	return ts.load(ctx, name, false)
}

// create returns topic's layout for a call that stores data in it (a publish, a group's
// registration): at the first such call in this process it records the count in Redis.
func (ts *topics) create(ctx context.Context, name string) (*topic, error) {
	return ts.load(ctx, name, true)
}

// unrecordedRecheck is how long a process trusts that a topic it reads, and has not written
// to, has no partitions recorded. A write reads the record again at once, and so does a
// listing of the topics (TopicNames), so only a reader that never lists (a dashboard between
// discoveries) may see a topic created meanwhile as unpartitioned, for this long at most.
const unrecordedRecheck = time.Minute

func (ts *topics) load(ctx context.Context, name string, write bool) (*topic, error) {
	now := time.Now()
	ts.mu.Lock()
	t, ok := ts.m[name]
	done := ok && (t.recorded || !write) && (t.expires.IsZero() || now.Before(t.expires))
	ts.mu.Unlock()
	if done {
		return t, nil
	}
	if err := backend.ValidateName("topic", name); err != nil {
		return nil, err
	}
	l, recorded, err := ts.resolve(ctx, name, write)
	if err != nil {
		return nil, err
	}
	var expires time.Time
	if !recorded {
		expires = now.Add(unrecordedRecheck)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]*topic{}
	}
	if old, ok := ts.m[name]; ok && old.layout.Count() == l.Count() {
		old.recorded = old.recorded || write
		old.expires = expires
		return old, nil
	}
	t = &topic{layout: l, recorded: write, expires: expires}
	ts.m[name] = t
	return t, nil
}

// resolve lays the topic out over the count configured, or, left to Redis, the count recorded
// (1 when none). A write makes Redis record it; recorded reports that Redis holds it, or that
// the count was configured, so that it need not be read again.
func (ts *topics) resolve(ctx context.Context, name string, write bool) (l *Layout, recorded bool, err error) {
	k := Keys{Record: RecordKey(ts.cfg.Tag(name)), InUse: ts.cfg.InUse(name)}
	p := ts.cfg.Partitions(name)
	fromRedis := p == 0
	if fromRedis {
		if p, err = Recorded(ctx, ts.cfg.Client, name, k.Record); err != nil {
			return nil, false, err
		}
	}
	if l, err = New(name, p, ts.cfg.Tag); err != nil {
		return nil, false, err
	}
	switch {
	case write:
		_, err = Ensure(ctx, ts.cfg.Client, name, p, k)
		var ce *CountError
		if fromRedis && errors.As(err, &ce) && ce.Recorded > 1 {
			// Created with partitions since the read: take them.
			if l, err = New(name, ce.Recorded, ts.cfg.Tag); err != nil {
				return nil, false, err
			}
		}
	case !fromRedis:
		err = Check(ctx, ts.cfg.Client, name, p, k)
	}
	if err != nil {
		return nil, false, err
	}
	return l, write || !fromRedis || p > 1, nil
}

// prefetch reads the records of the topics named in one pipeline and caches their counts, so
// that a listing's readers (a dashboard's rows) read none one by one. It does nothing when the
// counts are configured.
func (ts *topics) prefetch(ctx context.Context, names []string) error {
	if len(names) == 0 || ts.cfg.Partitions(names[0]) != 0 {
		return nil
	}
	gets := make([]*redis.StringCmd, len(names))
	_, err := ts.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			gets[i] = p.Get(ctx, RecordKey(ts.cfg.Tag(n)))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("relq: read the partitions of %d topics: %w", len(names), err)
	}
	now := time.Now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]*topic{}
	}
	for i, n := range names {
		p, expires := 1, now.Add(unrecordedRecheck)
		if v, err := gets[i].Result(); err == nil {
			if p, _ = parseRecord(v); p == 0 {
				continue // not understood: the topic's own read reports it
			}
			expires = time.Time{}
		}
		old, ok := ts.m[n]
		if ok && old.layout.Count() == p {
			if !old.expires.IsZero() {
				old.expires = expires
			}
			continue
		}
		l, err := New(n, p, ts.cfg.Tag)
		if err != nil {
			continue
		}
		ts.m[n] = &topic{layout: l, expires: expires}
	}
	return nil
}

// count is the partition count of topic: its layout's, read from Redis at its first use.
func (ts *topics) count(ctx context.Context, name string) (int, error) {
	t, err := ts.get(ctx, name)
	if err != nil {
		return 0, err
	}
	return t.layout.Count(), nil
}

// single reports a topic of one partition: the inner backend's topic itself, reached as it is,
// under its own delivery IDs.
func (t *topic) single() bool { return t.layout.Count() == 1 }

// check validates a topic and group name before any Redis call, as the inner backends do.
func check(topic, group string) error {
	if err := backend.ValidateName("topic", topic); err != nil {
		return err
	}
	return backend.ValidateName("group", group)
}

// forget drops a deleted topic's layout: its next use checks the count with Redis again.
func (ts *topics) forget(name string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.m, name)
}
