package list

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

var _ pubsub.TopicLister = (*Backend)(nil)

// Topics returns the sorted names of the topics under Options.Prefix that have a registered
// group, found by SCAN (on every primary of a Cluster) for their registry SET T:groups. It
// reads the whole keyspace, so it is meant for tools, not for a hot path. (The zset backend
// names its registry T:zgroups, so its topics are never listed here.)
func (b *Backend) Topics(ctx context.Context) ([]string, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return backendkit.ScanTopics(ctx, b.client, b.topicScan())
}

// HasTopic reports whether Topics would list topic, in one round trip and without a SCAN:
// whether it has a registered group.
func (b *Backend) HasTopic(ctx context.Context, topic string) (bool, error) {
	if err := b.check(ctx, "topic", topic); err != nil {
		return false, err
	}
	return b.topicScan().Keep(ctx, topic)
}

// topicScan finds the topics by their registry SET.
func (b *Backend) topicScan() backendkit.TopicScan {
	return backendkit.RegistryScan(b.client, func(topic string) string { return b.topicKeys(topic).groups })
}
