package adaptertest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// PublishWaitsForReplica checks that with WaitReplicas, Publish returns nil only once the
// replica has the messages, and fails with ErrNotReplicated when it cannot get them. stored
// reads, on the replica, how many messages topic "t" under prefix holds for
// backend.DefaultGroup, which is registered first.
func PublishWaitsForReplica(t *testing.T, build Build, stored func(ctx context.Context, replica *redis.Client, prefix string) int64) {
	primary := redistest.Start(t, redistest.Options{})
	replica := redistest.Start(t, redistest.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port)}})
	pc, rc := primary.Client(t), replica.Client(t)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		n, err := pc.Do(ctx, "WAIT", 1, 100).Int()
		return err == nil && n == 1
	}, 10*time.Second, 50*time.Millisecond, "replica never connected")

	prefix := redistest.Prefix(t)
	h, err := build(pc, prefix, conformance.Options{})
	require.NoError(t, err)
	be := h.Backend
	require.NoError(t, be.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "t", Group: backend.DefaultGroup}))
	pub, err := pubsub.NewPublisher(be, pubsub.PublisherConfig{WaitReplicas: 1, WaitTimeout: 5 * time.Second}, nil)
	require.NoError(t, err)
	require.NoError(t, pub.Publish("t", message.NewMessage("1", []byte("x"))))

	// The replica already holds the message: read it there, with no further waiting.
	require.EqualValues(t, 1, stored(ctx, rc, prefix))

	require.NoError(t, replica.Stop())
	pub2, err := pubsub.NewPublisher(be, pubsub.PublisherConfig{WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond}, nil)
	require.NoError(t, err)
	err = pub2.Publish("t", message.NewMessage("2", []byte("y")))
	require.True(t, errors.Is(err, pubsub.ErrNotReplicated), "got %v", err)
}
