package zset

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/relq/relq/pubsub"
)

// publishTries bounds the retries of a publish whose cached group list was stale. Each retry
// learns the registry from the failed attempt, so a second try succeeds unless groups are
// being registered on the topic at that very moment.
const publishTries = 5

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
	msgs := make([]any, 0, 3*len(p.Messages))
	for _, m := range p.Messages {
		msgs = append(msgs, ms(m.Delay), clampPriority(m.Priority), pubsub.EncodeEnvelope(m.Envelope))
	}
	tk := b.topicKeys(p.Topic)
	groups := b.cachedGroups(p.Topic)
	for range publishTries {
		keys := []string{tk.seq, tk.bodies, tk.refs, tk.groups, tk.priorities}
		args := make([]any, 0, 2+len(groups)+len(msgs))
		args = append(args, pubsub.DefaultGroup, len(groups))
		for _, g := range groups {
			keys = append(keys, b.groupKeys(p.Topic, g).publishKeys()...)
			args = append(args, g)
		}
		args = append(args, msgs...)
		res, err := publishScript.Run(ctx, b.client, keys, args...).Slice()
		if err != nil {
			return nil, err
		}
		if toInt(res[0]) == 1 {
			last := toInt(res[1])
			ids := make([]string, len(p.Messages))
			for i := range ids {
				ids[i] = strconv.FormatInt(last-int64(len(ids)-1-i), 10)
			}
			return ids, nil
		}
		if groups, err = registryGroups(res[1:]); err != nil {
			return nil, err
		}
		b.groups.Store(p.Topic, groups)
	}
	return nil, fmt.Errorf("zset: publish to %q: its groups kept changing for %d tries", p.Topic, publishTries)
}

// cachedGroups returns the groups Publish last saw on topic, or {default}.
func (b *Backend) cachedGroups(topic string) []string {
	if v, ok := b.groups.Load(topic); ok {
		return v.([]string)
	}
	return []string{pubsub.DefaultGroup}
}

// registryGroups turns the registry publish.lua returned into the list to route to. Names are
// checked again: a foreign member with braces would address keys outside the topic's slot.
func registryGroups(members []any) ([]string, error) {
	if len(members) == 0 {
		return []string{pubsub.DefaultGroup}, nil
	}
	groups := make([]string, 0, len(members))
	for _, m := range members {
		g, _ := m.(string)
		if err := pubsub.ValidateName("group", g); err != nil {
			return nil, fmt.Errorf("zset: registered group: %w", err)
		}
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return groups, nil
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
	groups, err := b.client.SMembers(ctx, b.topicKeys(topic).groups).Result()
	if err != nil {
		return nil, err
	}
	slices.Sort(groups)
	return groups, nil
}
