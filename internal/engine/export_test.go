package engine

import (
	"context"

	"github.com/relq/relq/pubsub"
)

// PublishOn is Publish on a given lane and token, as a resend by the Redis client runs it.
func (e *Engine) PublishOn(ctx context.Context, p *pubsub.PublishParams, lane int, token string) ([]string, error) {
	return e.publish(ctx, p, e.lane(lane), token)
}

// Remember caches a registry reply, as Publish and EnsureGroup do.
func (e *Engine) Remember(topic string, reply []any) error {
	_, err := e.remember(topic, reply)
	return err
}

// Cached returns the groups Publish would route to on topic.
func (e *Engine) Cached(topic string) []string { return e.cached(topic).groups }
