package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/replicas"
)

// TopicNames returns the sorted names of the topics under the prefix that have a registered group
// or a backlog (ListTopics' names).
func (e *Engine) TopicNames(ctx context.Context) ([]string, error) {
	infos, err := e.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(infos))
	for i, t := range infos {
		names[i] = t.Name
	}
	return names, nil
}

// HasTopic reports whether TopicNames would list topic, in one round trip and without a SCAN.
func (e *Engine) HasTopic(ctx context.Context, topic string) (bool, error) {
	if err := e.Check(ctx, "topic", topic); err != nil {
		return false, err
	}
	t, _, err := e.describe(ctx, topic)
	return err == nil && (len(t.Groups) > 0 || t.Backlog > 0), err
}

// ListTopics lists the topics under the prefix that have a group or a backlog of this
// backend, sorted by name: a SCAN (on every primary of a Cluster) for the topics' meta HASH,
// then topic.lua on each. It reads the whole keyspace, so it is meant for tools, not for a hot
// path. Each backend keeps its registry, and marks its backlog in meta, under its own name,
// so a prefix shared by list and zset topics lists each backend's own.
func (e *Engine) ListTopics(ctx context.Context) ([]backend.TopicInfo, error) {
	if err := e.Check(ctx); err != nil {
		return nil, err
	}
	names, err := backendkit.ScanTopics(ctx, e.client, backendkit.TopicScan{
		Marker: func(topic, _ string) string { return e.topicKeys(topic).meta },
		Type:   "hash",
	})
	if err != nil {
		return nil, err
	}
	out := make([]backend.TopicInfo, 0, len(names))
	for _, name := range names {
		t, _, err := e.describe(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("topic %q: %w", name, err)
		}
		if len(t.Groups) > 0 || t.Backlog > 0 {
			out = append(out, t)
		}
	}
	return out, nil
}

// Topic describes a topic: its groups and its backlog. backend.ErrTopicNotFound when it has
// neither.
func (e *Engine) Topic(ctx context.Context, topic string) (backend.TopicInfo, error) {
	if err := e.Check(ctx, "topic", topic); err != nil {
		return backend.TopicInfo{}, err
	}
	t, _, err := e.describe(ctx, topic)
	if err == nil && len(t.Groups) == 0 && t.Backlog == 0 {
		err = fmt.Errorf("%s: topic %q: %w", e.store.Name, topic, backend.ErrTopicNotFound)
	}
	return t, err
}

// ListGroups lists the groups registered on a topic, sorted by name, with their flags and an
// ephemeral group's deadline; none for a topic without a group (only a backlog, or no key at
// all), as Backend.GroupNames.
func (e *Engine) ListGroups(ctx context.Context, topic string) ([]backend.GroupInfo, error) {
	if err := e.Check(ctx, "topic", topic); err != nil {
		return nil, err
	}
	_, groups, err := e.describe(ctx, topic)
	return groups, err
}

// describe reads topic.lua's view of a topic, groups sorted by name.
func (e *Engine) describe(ctx context.Context, topic string) (backend.TopicInfo, []backend.GroupInfo, error) {
	res, err := e.run(ctx, "topic", append(e.topicKeys(topic).list(), e.backlog(topic)...)).Slice()
	if err != nil {
		return backend.TopicInfo{}, nil, err
	}
	t := backend.TopicInfo{Name: topic, Backlog: backendkit.Int(res[0]), BacklogDropped: backendkit.Int(res[1]), Groups: []string{}}
	groups := []backend.GroupInfo{}
	for i := 2; i+2 < len(res); i += 3 {
		name, _ := res[i].(string)
		value, _ := res[i+1].(string)
		g := backend.GroupInfo{Topic: topic, Name: name}
		_, flags, _ := strings.Cut(value, ":")
		g.Paused = strings.Contains(flags, "p")
		g.Ephemeral = strings.Contains(flags, "e")
		if at := backendkit.Int(res[i+2]); at >= 0 {
			g.Expires = time.UnixMilli(at)
		}
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b backend.GroupInfo) int { return strings.Compare(a.Name, b.Name) })
	for _, g := range groups {
		t.Groups = append(t.Groups, g.Name)
	}
	return t, groups, nil
}

// WaitReplicas waits until n replicas have every write made to topic so far (Redis WAIT).
func (e *Engine) WaitReplicas(ctx context.Context, topic string, n int, timeout time.Duration) (int, error) {
	if err := backend.ValidateName("topic", topic); err != nil {
		return 0, err
	}
	meta := e.topicKeys(topic).meta
	return replicas.WaitAfter(ctx, e.client, meta, func(pipe redis.Pipeliner) {
		pipe.HIncrBy(ctx, meta, "seq", 0)
	}, n, timeout)
}

// DeleteBody deletes the stored body of message id of topic, as a hand edit or a lost write
// would leave it. For the backends' Faults (tests) only.
func (e *Engine) DeleteBody(ctx context.Context, topic, id string) error {
	if err := e.Check(ctx, "topic", topic); err != nil {
		return err
	}
	return e.client.HDel(ctx, e.topicKeys(topic).bodies, id).Err()
}

// Eviction reads Redis's maxmemory-policy and evicted keys (backend.EvictionReader).
func (e *Engine) Eviction(ctx context.Context) (backend.Eviction, error) {
	return backendkit.ReadEviction(ctx, e.client)
}
