package backend

import "context"

// TopicLister is implemented by backends that can find the topics they hold in Redis, for
// tools that watch every topic (the relq CLI, the Prometheus collector). It is separate from
// Backend so that an adapter without a cheap way to list topics still satisfies the contract.
type TopicLister interface {
	// TopicNames returns the names of the topics under the backend's prefix that have a
	// registered group or a backlog, sorted: the topics Admin.ListTopics describes. It scans
	// keys (SCAN, on every primary of a Cluster), so it is meant for tools, not for a hot path.
	TopicNames(ctx context.Context) ([]string, error)
	// HasTopic reports whether TopicNames would list topic, in one round trip and without a SCAN.
	HasTopic(ctx context.Context, topic string) (bool, error)
}
