package zset_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/adaptertest"
)

// With WaitReplicas, Publish returns nil only once the replica has the messages, and fails
// with ErrNotReplicated when it cannot get them.
func TestPublishWaitsForReplica(t *testing.T) {
	t.Parallel()
	adaptertest.PublishWaitsForReplica(t, build, func(ctx context.Context, replica *redis.Client, prefix string) int64 {
		return replica.ZCard(ctx, "{"+prefix+":t}:g:default:queue").Val()
	})
}
