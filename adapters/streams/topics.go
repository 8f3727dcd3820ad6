package streams

import (
	"context"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

var _ backend.TopicLister = (*Backend)(nil)

// TopicNames returns the sorted names of the topics under Options.Prefix that have a group or a
// backlog, found by SCAN (on every primary of a Cluster). It reads the whole keyspace, so it
// is meant for tools, not for a hot path.
//
// In FormatNative it looks for streams named T:stream. In FormatWatermill the stream is the
// bare topic name, which no pattern can tell from any other key, so it looks for relq's
// publish counter of the topic, {topic}:prefix:published, which every topic that relq
// published to or registered a group on has: a stream that only watermill-redisstream ever
// used is not listed. Either way a topic is listed only while its stream has a consumer group
// or a backlog.
func (b *Backend) TopicNames(ctx context.Context) ([]string, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return backendkit.ScanTopics(ctx, b.client, b.topicScan())
}

// HasTopic reports whether topic's stream has a consumer group or a backlog, in one round
// trip and without a SCAN.
func (b *Backend) HasTopic(ctx context.Context, topic string) (bool, error) {
	if err := b.check(ctx, "topic", topic); err != nil {
		return false, err
	}
	d, err := b.topicInfo(ctx, topic)
	return len(d.groups) > 0 || d.backlog > 0, err
}

// topicScan finds the topics by a key relq writes for each (see Topics), keeping those with a
// group or a backlog.
func (b *Backend) topicScan() backendkit.TopicScan {
	s := backendkit.TopicScan{
		Marker: func(topic, _ string) string { return b.topicKeys(topic).stream },
		Type:   "stream",
		Keep:   b.HasTopic,
	}
	if b.opts.Format == FormatWatermill {
		s.Marker = func(topic, _ string) string { return b.topicKeys(topic).published }
		s.Type = "string"
	}
	return s
}
