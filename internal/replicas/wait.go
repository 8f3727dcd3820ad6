// Package replicas implements Redis WAIT for the backends' backend.ReplicaWaiter.
package replicas

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Wait blocks until replicas replicas acknowledged every write the primary owning key had
// made before the call, or timeout passes, and returns how many did.
//
// WAIT counts the writes of its own connection, and a pooled client's publish may have run
// on another one. So Wait pipelines a real write to key (INCRBY key 0, which Redis replicates
// although it changes nothing) with WAIT on one connection: the replication stream is
// ordered, so a replica that acknowledged that write has every earlier write too. key must be
// an integer key the caller owns, such as a topic's ID counter; on Cluster the pipeline goes
// to the primary that owns key's slot.
func Wait(ctx context.Context, client redis.UniversalClient, key string, replicas int, timeout time.Duration) (int, error) {
	return WaitAfter(ctx, client, key, func(pipe redis.Pipeliner) { pipe.IncrBy(ctx, key, 0) }, replicas, timeout)
}

// WaitAfter is Wait with the write to send before WAIT given: a write to key that changes
// nothing, such as HINCRBY key field 0 on a HASH.
func WaitAfter(ctx context.Context, client redis.UniversalClient, key string, write func(redis.Pipeliner), replicas int, timeout time.Duration) (int, error) {
	var conn redis.Cmdable = client
	if cc, ok := client.(*redis.ClusterClient); ok {
		primary, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return 0, err
		}
		conn = primary
	}
	var acked *redis.IntCmd
	_, err := conn.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		write(pipe)
		acked = redis.NewIntCmd(ctx, "wait", replicas, timeout.Milliseconds())
		return pipe.Process(ctx, acked)
	})
	if err != nil {
		return 0, fmt.Errorf("wait for %d replica(s): %w", replicas, err)
	}
	return int(acked.Val()), nil
}
