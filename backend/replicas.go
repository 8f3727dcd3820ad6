package backend

import (
	"context"
	"time"
)

// ReplicaWaiter is implemented by backends that can wait for replication (Redis WAIT). It is
// an optional interface, not part of Backend, because WAIT is meaningful only on a primary
// with replicas; PublisherConfig.WaitReplicas requires it.
//
// WAIT counts replicas that acknowledged the writes of the connection it runs on, so an
// implementation must make the count cover the publish that preceded the call: for example
// by pipelining a write to one of the topic's keys with WAIT on one connection (replication
// is ordered, so a replica that acknowledged the later write has the publish too). The topic
// says which node to ask on Redis Cluster. It returns how many replicas acknowledged.
type ReplicaWaiter interface {
	WaitReplicas(ctx context.Context, topic string, replicas int, timeout time.Duration) (int, error)
}
