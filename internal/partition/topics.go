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
	// Queue, when set, queues the first attempt of the inner backend's Publish on a pipeline
	// (see QueueFunc): the parts of a batch bound for one primary then go in one round trip.
	Queue QueueFunc
	// QueueAck, when set, queues the inner backend's Ack on a pipeline, or reports (ok false)
	// a batch it cannot queue: the acks of a batch bound for one primary then go in one round
	// trip. done reports again, as QueueFunc's does, an ack that must be sent by Ack itself.
	QueueAck func(ctx context.Context, pipe redis.Pipeliner, p *backend.AckParams) (done func() (res backend.AckResult, again bool, err error), ok bool)
}

// QueueFunc queues the first attempt of an inner Publish of p on pipe. done, called once pipe
// ran, returns its result; again reports an attempt that stored nothing and needs the inner
// Publish itself (a registry to learn, groups to sweep, a script to load on that primary).
type QueueFunc func(ctx context.Context, pipe redis.Pipeliner, p *backend.PublishParams) (done func() (res backend.PublishResult, again bool, err error))

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
	// recorded: this process made sure Redis records the topic's count (create), or it was
	// read from Redis's record.
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

// topics caches what a Backend knows of the topics it met. A partitioned topic's layout is
// kept in m while the process lives: its count is recorded once and never changes (until the
// topic is deleted). That a topic has one partition is kept in a fixed table instead, so that a
// process meeting ever new topics (a reply topic per request) keeps a bounded cache: a topic
// whose entry was taken by another is read from Redis again at its next use.
type topics struct {
	cfg    Config
	mu     sync.Mutex
	m      map[string]*topic
	single [singleSlots]singleEntry
}

// singleSlots bounds the one-partition topics a Backend remembers.
const singleSlots = 1024

// singleEntry remembers that a topic has one partition: until expires (a count read from
// Redis is read again after a while) and whether this process made sure of it for a write.
type singleEntry struct {
	name     string
	expires  time.Time
	recorded bool
}

// slotOf is the table entry of a one-partition topic.
func slotOf(name string) int { return int(fnv32a(name) % singleSlots) }

// singleTopic is the layout of a topic of one partition: the topic itself.
func singleTopic(name string) *topic {
	return &topic{layout: &Layout{topic: name, names: []string{name}}, recorded: true}
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

// unrecordedRecheck is how long a process trusts that a topic has no partitions recorded. A
// listing of the topics (TopicNames) reads the records again, so a reader that lists (a
// dashboard) sees a topic created meanwhile at its next discovery; others within this while.
const unrecordedRecheck = time.Minute

// forever stands for a count that is never read again (configured, not read from Redis).
var forever = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

func (ts *topics) load(ctx context.Context, name string, write bool) (*topic, error) {
	if t, ok := ts.cached(name, write, time.Now()); ok {
		return t, nil
	}
	if err := backend.ValidateName("topic", name); err != nil {
		return nil, err
	}
	l, recorded, err := ts.resolve(ctx, name, write)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if l.Count() == 1 {
		expires := forever
		if !recorded {
			expires = now.Add(unrecordedRecheck)
		}
		e := &ts.single[slotOf(name)]
		*e = singleEntry{name: name, expires: expires, recorded: write || (e.name == name && e.recorded)}
		delete(ts.m, name)
		return singleTopic(name), nil
	}
	if ts.m == nil {
		ts.m = map[string]*topic{}
	}
	// A count read from Redis is its record; a configured one is recorded by a write.
	rec := write || ts.cfg.Partitions(name) == 0
	if old, ok := ts.m[name]; ok && old.layout.Count() == l.Count() {
		old.recorded = old.recorded || rec
		return old, nil
	}
	t := &topic{layout: l, recorded: rec}
	ts.m[name] = t
	return t, nil
}

// cached returns what the cache knows of topic for a read or a write at now.
func (ts *topics) cached(name string, write bool, now time.Time) (*topic, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.m[name]; ok && (t.recorded || !write) {
		return t, true
	}
	if e := &ts.single[slotOf(name)]; e.name == name && now.Before(e.expires) && (e.recorded || !write) {
		return singleTopic(name), true
	}
	return nil, false
}

// resolve lays the topic out over the count configured, or, left to Redis, the count recorded
// (1 when none). A write of a configured count makes Redis record it; recorded reports a count
// that need not be read again: configured, or recorded with partitions (a record never
// changes while its topic lives).
func (ts *topics) resolve(ctx context.Context, name string, write bool) (l *Layout, recorded bool, err error) {
	k := Keys{Record: RecordKey(ts.cfg.Tag(name)), InUse: ts.cfg.InUse(name)}
	p := ts.cfg.Partitions(name)
	if p == 0 {
		// Left to Redis: the record says, and a topic without one is the backend's own. (A
		// write needs no more: only a configured count is written.)
		if p, err = Recorded(ctx, ts.cfg.Client, name, k.Record); err != nil {
			return nil, false, err
		}
		l, err = New(name, p, ts.cfg.Tag)
		return l, err == nil && p > 1, err
	}
	if l, err = New(name, p, ts.cfg.Tag); err != nil {
		return nil, false, err
	}
	if write {
		_, err = Ensure(ctx, ts.cfg.Client, name, p, k)
	} else {
		err = Check(ctx, ts.cfg.Client, name, p, k)
	}
	return l, err == nil, err
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
		v, err := gets[i].Result()
		switch {
		case errors.Is(err, redis.Nil):
			if _, ok := ts.m[n]; !ok {
				e := &ts.single[slotOf(n)]
				*e = singleEntry{name: n, expires: now.Add(unrecordedRecheck), recorded: e.name == n && e.recorded}
			}
		case err == nil:
			p, _ := parseRecord(v)
			if p < 2 {
				continue // not understood: the topic's own read reports it
			}
			if old, ok := ts.m[n]; ok && old.layout.Count() == p {
				continue
			}
			if l, err := New(n, p, ts.cfg.Tag); err == nil {
				ts.m[n] = &topic{layout: l, recorded: true}
			}
		}
		// Any other error: this topic's node failed (a Cluster pipeline reports only one).
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
	if e := &ts.single[slotOf(name)]; e.name == name {
		*e = singleEntry{}
	}
}
