package list

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// Publish stores the batch in one publish.lua call: the bodies once, and each id in the ready
// list (or delayed ZSET) of every registered group, or of pubsub.DefaultGroup when the topic has
// none yet. It returns the delivery IDs in order.
func (b *Backend) Publish(ctx context.Context, p *pubsub.PublishParams) ([]string, error) {
	if err := b.check(ctx, "topic", p.Topic); err != nil {
		return nil, err
	}
	if len(p.Messages) == 0 {
		return nil, nil
	}
	return b.publish(ctx, p, b.batchKey(p.Topic))
}

// publish is Publish with the batch's idempotency key given (tests resend a batch with it).
func (b *Backend) publish(ctx context.Context, p *pubsub.PublishParams, batchKey string) ([]string, error) {
	msgs := make([]any, 0, 2*len(p.Messages))
	for _, m := range p.Messages {
		msgs = append(msgs, backendkit.Millis(m.Delay), pubsub.EncodeEnvelope(m.Envelope))
	}
	tk := b.topicKeys(p.Topic)
	return b.groups.Publish(ctx, b.client, &backendkit.Fanout{
		Script:    publishScript,
		Topic:     p.Topic,
		TopicKeys: []string{tk.seq, tk.bodies, tk.refs, tk.groups},
		GroupKeys: func(g string) []string { return b.groupKeys(p.Topic, g).publishKeys() },
		Messages:  msgs,
		Count:     len(p.Messages),
		BatchKey:  batchKey,
	})
}

// EnsureGroup registers a group (SADD, with SMEMBERS in the same round trip). The group receives messages published from now on;
// p.FromOldest cannot be honoured by lists (Capabilities.NewGroupReplay is false) and is ignored.
func (b *Backend) EnsureGroup(ctx context.Context, p *pubsub.EnsureGroupParams) error {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return err
	}
	// Reading the registry back in the same round trip primes the publish cache, so the first
	// Publish of this process after a Subscribe does not pay a stale-cache retry.
	key := b.topicKeys(p.Topic).groups
	var members *redis.StringSliceCmd
	if _, err := b.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.SAdd(ctx, key, p.Group)
		members = pipe.SMembers(ctx, key)
		return nil
	}); err != nil {
		return err
	}
	return b.groups.Store(p.Topic, members.Val())
}

// Groups lists the groups registered on a topic, sorted.
func (b *Backend) Groups(ctx context.Context, topic string) ([]string, error) {
	if err := b.check(ctx, "topic", topic); err != nil {
		return nil, err
	}
	return backendkit.SortedMembers(ctx, b.client, b.topicKeys(topic).groups)
}
