package adaptertest

import (
	"context"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/stretchr/testify/require"
)

// RequestReplyRounds is how many sequential round trips RequestReply makes.
const RequestReplyRounds = 200

// RequestReply makes RequestReplyRounds sequential round trips with Watermill's
// components/requestreply on a client with go-redis's default pool (10 connections per CPU),
// through a RequestReplyRig whose requests share one reply topic (ephemeral reply groups where
// the backend keeps them, durable otherwise). No call may wait for a pooled connection
// (PoolStats' WaitCount and Timeouts stay 0): a subscription that stops must give its
// connections back at once, not keep a blocked claim until Block. Once everything is closed
// no pooled connection is in use, and ephemeral reply groups are all gone.
func RequestReply(t *testing.T, build Build) {
	t.Parallel()
	client, prefix := namedClient(t, nil)
	h, err := build(client, prefix, conformance.Options{})
	require.NoError(t, err)
	closeBackend(t, h.Backend)
	_, ephemeral := h.Backend.(backend.Ephemeral)
	const replies = "replies"
	rig := NewRequestReplyRig(t, h.Backend, RequestReplyOptions{
		ReplyTopic: func(string) string { return replies },
		Ephemeral:  ephemeral,
	})

	start := time.Now()
	for i := range RequestReplyRounds {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := rig.Send(ctx, i)
		cancel()
		require.NoError(t, err, "request %d", i+1)
	}
	took := time.Since(start)
	t.Logf("%s: %d request-reply round trips in %v (%v each), ephemeral reply groups: %v",
		h.Backend.Name(), RequestReplyRounds, took.Round(time.Millisecond), (took / RequestReplyRounds).Round(time.Microsecond), ephemeral)

	s := client.PoolStats()
	t.Logf("pool: size %d, hits %d, misses %d, total %d, idle %d", client.Options().PoolSize, s.Hits, s.Misses, s.TotalConns, s.IdleConns)
	require.Zero(t, s.WaitCount, "calls waited for one of the client's %d pooled connections", client.Options().PoolSize)
	require.Zero(t, s.Timeouts, "calls timed out waiting for one of the client's %d pooled connections", client.Options().PoolSize)

	require.Eventually(t, func() bool { return rig.Finished() == RequestReplyRounds }, time.Minute, time.Millisecond,
		"every reply subscriber closed")
	rig.Stop()
	s = client.PoolStats()
	require.Equal(t, s.TotalConns, s.IdleConns, "pooled connections still in use with every subscriber closed")
	if ephemeral {
		groups, err := h.Backend.GroupNames(context.Background(), replies)
		require.NoError(t, err)
		require.Empty(t, groups, "ephemeral reply groups left behind")
	}
}
