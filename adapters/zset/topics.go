package zset

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

var _ pubsub.TopicLister = (*Backend)(nil)

// Topics returns the sorted names of the topics under Options.Prefix that have a registered
// group, found by SCAN (on every primary of a Cluster) for their registry SET T:groups. It
// reads the whole keyspace, so it is meant for tools, not for a hot path.
//
// The list backend keeps the same registry, counters and dead-letter keys, so under a prefix
// shared with it Topics tells the two apart by each group's ready key, a ZSET here and a LIST
// there: a topic with a LIST ready key is left out. A topic with nothing ready or delayed in
// any group (drained, or holding only pending deliveries and dead letters) has no key that
// tells, and both backends list it. Stats and DeadLetters read such a topic alike through
// either backend; use the backend that wrote it for anything that writes.
func (b *Backend) Topics(ctx context.Context) ([]string, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return backendkit.ScanTopics(ctx, b.client, b.topicScan())
}

// HasTopic reports whether Topics would list topic, in two round trips and without a SCAN:
// whether it has a registered group and no group's ready key shows the list backend.
func (b *Backend) HasTopic(ctx context.Context, topic string) (bool, error) {
	if err := b.check(ctx, "topic", topic); err != nil {
		return false, err
	}
	return b.topicScan().Keep(ctx, topic)
}

// topicScan finds the topics by their registry SET, keeping those whose ready keys are ZSETs.
func (b *Backend) topicScan() backendkit.TopicScan {
	registry := func(topic string) string { return b.topicKeys(topic).groups }
	return backendkit.TopicScan{
		Marker: func(topic, _ string) string { return registry(topic) },
		Type:   "set",
		Keep: backendkit.KeepReadyType(b.client, registry,
			func(topic, group string) string { return b.groupKeys(topic, group).ready }, "zset"),
	}
}
