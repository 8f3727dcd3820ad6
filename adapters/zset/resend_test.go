package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// The Redis client resends a script whose reply it lost; the resend of a publish stores
// nothing twice and returns the same delivery IDs.
func TestPublishResentWithItsBatchKeyStoresOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := &pubsub.PublishParams{Topic: "orders", Messages: []pubsub.OutMessage{
		{Envelope: adaptertest.Envelope("a")}, {Envelope: adaptertest.Envelope("b")},
	}}
	batch := e.b.batchKey("orders")
	first, err := e.b.publish(e.Ctx, p, batch)
	require.NoError(t, err)
	again, err := e.b.publish(e.Ctx, p, batch)
	require.NoError(t, err)
	require.Equal(t, first, again)

	st := e.Stats("orders", pubsub.DefaultGroup)
	require.EqualValues(t, 2, st.Ready)
	require.EqualValues(t, 2, st.Counters.Published)
	require.Len(t, e.BatchKeys("orders"), 1)
	ttl := e.C.PTTL(e.Ctx, batch).Val()
	require.True(t, ttl > 0 && ttl <= time.Minute, "batch key TTL %v", ttl)

	// A new Publish call gets a new batch key, and new IDs.
	other, err := e.b.Publish(e.Ctx, p)
	require.NoError(t, err)
	require.NotEqual(t, first, other)
	require.EqualValues(t, 4, e.Stats("orders", pubsub.DefaultGroup).Ready)
}
