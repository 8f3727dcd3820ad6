package partition

import (
	"context"
	"sync"

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
	// Partitions is the partition count configured for a topic, 1 to MaxCount.
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

func (ts *topics) load(ctx context.Context, name string, write bool) (*topic, error) {
	ts.mu.Lock()
	t, ok := ts.m[name]
	done := ok && (t.recorded || !write)
	ts.mu.Unlock()
	if done {
		return t, nil
	}
	if err := backend.ValidateName("topic", name); err != nil {
		return nil, err
	}
	p := ts.cfg.Partitions(name)
	l, err := New(name, p, ts.cfg.Tag)
	if err != nil {
		return nil, err
	}
	k := Keys{Record: RecordKey(ts.cfg.Tag(name)), InUse: ts.cfg.InUse(name)}
	if write {
		_, err = Ensure(ctx, ts.cfg.Client, name, p, k)
	} else {
		err = Check(ctx, ts.cfg.Client, name, p, k)
	}
	if err != nil {
		return nil, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if old, ok := ts.m[name]; ok && (old.recorded || !write) {
		return old, nil
	}
	if ts.m == nil {
		ts.m = map[string]*topic{}
	}
	t = &topic{layout: l, recorded: write}
	if old, ok := ts.m[name]; ok {
		old.recorded = old.recorded || write
		return old, nil
	}
	ts.m[name] = t
	return t, nil
}

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
