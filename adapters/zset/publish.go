package zset

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// Publish stores the batch in one publish.lua call: the bodies once, and each message in the
// ready ZSET of every registered group (or of pubsub.DefaultGroup when the topic has none
// yet), scored with its due time, Redis now + its delay, one now for the whole batch. It wakes
// one blocked consumer of each group and returns the delivery IDs in order. Priorities are
// clamped to [PriorityMin, PriorityMax].
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
	msgs := make([]any, 0, 3*len(p.Messages))
	for _, m := range p.Messages {
		msgs = append(msgs, backendkit.Millis(m.Delay), clampPriority(m.Priority), pubsub.EncodeEnvelope(m.Envelope))
	}
	tk := b.topicKeys(p.Topic)
	return b.groups.Publish(ctx, b.client, &backendkit.Fanout{
		Script:    publishScript,
		Topic:     p.Topic,
		TopicKeys: []string{tk.seq, tk.bodies, tk.refs, tk.groups, tk.priorities},
		GroupKeys: func(g string) []string { return b.groupKeys(p.Topic, g).publishKeys() },
		Messages:  msgs,
		Count:     len(p.Messages),
		BatchKey:  batchKey,
	})
}

// EnsureGroup registers a group (one SADD). The group receives messages published from now on;
// p.FromOldest cannot be honoured (Capabilities.NewGroupReplay is false) and is ignored.
func (b *Backend) EnsureGroup(ctx context.Context, p *pubsub.EnsureGroupParams) error {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return err
	}
	return b.client.SAdd(ctx, b.topicKeys(p.Topic).groups, p.Group).Err()
}

// Groups lists the groups registered on a topic, sorted.
func (b *Backend) Groups(ctx context.Context, topic string) ([]string, error) {
	if err := b.check(ctx, "topic", topic); err != nil {
		return nil, err
	}
	return backendkit.SortedMembers(ctx, b.client, b.topicKeys(topic).groups)
}
