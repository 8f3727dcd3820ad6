package engine

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/internal/replicas"
	"github.com/relq/relq/pubsub"
)

// Topics returns the sorted names of the topics under the prefix that have a registered group,
// found by SCAN (on every primary of a Cluster) for their registry HASH, which each backend
// names apart. It reads the whole keyspace, so it is meant for tools, not for a hot path.
func (e *Engine) Topics(ctx context.Context) ([]string, error) {
	if err := e.Check(ctx); err != nil {
		return nil, err
	}
	return backendkit.ScanTopics(ctx, e.client, e.topicScan())
}

// HasTopic reports whether Topics would list topic, in one round trip and without a SCAN.
func (e *Engine) HasTopic(ctx context.Context, topic string) (bool, error) {
	if err := e.Check(ctx, "topic", topic); err != nil {
		return false, err
	}
	return e.topicScan().Keep(ctx, topic)
}

func (e *Engine) topicScan() backendkit.TopicScan {
	registry := func(topic string) string { return e.topicKeys(topic).registry }
	return backendkit.TopicScan{
		Marker: func(topic, _ string) string { return registry(topic) },
		Type:   "hash",
		Keep: func(ctx context.Context, topic string) (bool, error) {
			n, err := e.client.HLen(ctx, registry(topic)).Result()
			return n > 0, err
		},
	}
}

// WaitReplicas waits until n replicas have every write made to topic so far (Redis WAIT).
func (e *Engine) WaitReplicas(ctx context.Context, topic string, n int, timeout time.Duration) (int, error) {
	if err := pubsub.ValidateName("topic", topic); err != nil {
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

// Eviction reads Redis's maxmemory-policy and evicted keys (pubsub.EvictionReader).
func (e *Engine) Eviction(ctx context.Context) (pubsub.Eviction, error) {
	return backendkit.ReadEviction(ctx, e.client)
}
