package streams

import (
	"context"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/replicas"
)

var _ backend.ReplicaWaiter = (*Backend)(nil)

// WaitReplicas waits until replicas replicas have every write made to topic so far (Redis
// WAIT), for pubsub.PublisherConfig.WaitReplicas. It returns how many acknowledged in time.
func (b *Backend) WaitReplicas(ctx context.Context, topic string, n int, timeout time.Duration) (int, error) {
	if err := backend.ValidateName("topic", topic); err != nil {
		return 0, err
	}
	return replicas.Wait(ctx, b.client, b.topicKeys(topic).published, n, timeout)
}
