package engine

import (
	"context"
	"sync"
	"time"

	"github.com/relq/relq/backend"
)

// PublishOn is Publish on a given lane and token, as a resend by the Redis client runs it.
func (e *Engine) PublishOn(ctx context.Context, p *backend.PublishParams, lane int, token string) ([]string, error) {
	res, err := e.publish(ctx, p, e.lanes.Field(lane), token)
	return res.IDs, err
}

// Remember caches a registry reply {version, reborn, groups...}, as Publish and EnsureGroup
// do.
func (e *Engine) Remember(topic string, reply []any) error {
	_, err := e.remember(topic, reply)
	return err
}

// Learn caches a registry reply as a process that knew nothing else of topic: another
// process's knowledge, in tests that run one engine.
func (e *Engine) Learn(topic string, reply []any) error {
	e.registries.Delete(topic)
	return e.Remember(topic, reply)
}

// Cached returns the groups Publish would route to on topic.
func (e *Engine) Cached(topic string) []string { return e.cached(topic).groups }

// CachedVersion returns the registry version Publish would send for topic.
func (e *Engine) CachedVersion(topic string) string { return e.cached(topic).version }

// Tag is the hash tag that starts every key of topic.
func (e *Engine) Tag(topic string) string { return e.tag(topic) }

// BacklogKeys are topic's backlog keys.
func (e *Engine) BacklogKeys(topic string) []string { return e.backlog(topic) }

// TombsKey is topic's ZSET of tombstones.
func (e *Engine) TombsKey(topic string) string { return e.topicKeys(topic).tombs }

// TrashKey is topic's trash ZSET.
func (e *Engine) TrashKey(topic string) string { return e.topicKeys(topic).trash }

// DeleteGroupSteps is DeleteGroup that stops after steps drain.lua calls, as a process that
// dies half way through a deletion leaves it.
func (e *Engine) DeleteGroupSteps(ctx context.Context, topic, group string, steps int) error {
	_, err := e.deleteGroup(ctx, topic, group, modeAny, "", steps)
	return err
}

// IdleConsumers counts the consumers whose idle state the engine keeps.
func (e *Engine) IdleConsumers() int { return count(&e.idle.m) }

// CachedTopics counts the topics whose registry the engine caches.
func (e *Engine) CachedTopics() int { return count(&e.registries) }

// SetRegistryIdle sets how long a cached registry that can restore no group stays unused.
func (e *Engine) SetRegistryIdle(d time.Duration) { e.registryIdle = d }

func count(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool {
		n++
		return true
	})
	return n
}
