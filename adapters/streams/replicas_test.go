package streams_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/internal/adaptertest"
)

// With WaitReplicas, Publish returns nil only once the replica has the messages, and fails
// with ErrNotReplicated when it cannot get them.
func TestPublishWaitsForReplica(t *testing.T) {
	t.Parallel()
	adaptertest.PublishWaitsForReplica(t, buildFormat(streams.FormatNative), func(ctx context.Context, replica *redis.Client, prefix string) int64 {
		return replica.XLen(ctx, "{"+prefix+":t}:stream").Val()
	})
}
