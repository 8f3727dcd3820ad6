package adaptertest

import (
	"testing"
	"time"

	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// PublishResentStoresOnce checks that resending one Publish call with its batch key, as the
// Redis client does after a lost reply, stores nothing twice and returns the same IDs, while a
// new call stores anew. newBatch returns a fresh batch key of topic "orders"; publish runs the
// backend's publish with the batch key given.
func PublishResentStoresOnce(t *testing.T, e *Env, newBatch func() string,
	publish func(p *pubsub.PublishParams, batch string) ([]string, error)) {
	t.Helper()
	p := &pubsub.PublishParams{Topic: "orders", Messages: []pubsub.OutMessage{
		{Envelope: Envelope("a")}, {Envelope: Envelope("b")},
	}}
	batch := newBatch()
	first, err := publish(p, batch)
	require.NoError(t, err)
	again, err := publish(p, batch)
	require.NoError(t, err)
	require.Equal(t, first, again)

	st := e.Stats("orders", pubsub.DefaultGroup)
	require.EqualValues(t, 2, st.Ready)
	require.EqualValues(t, 2, st.Counters.Published)
	require.Len(t, e.BatchKeys("orders"), 1)
	ttl := e.C.PTTL(e.Ctx, batch).Val()
	require.True(t, ttl > 0 && ttl <= time.Minute, "batch key TTL %v", ttl)

	other, err := publish(p, newBatch())
	require.NoError(t, err)
	require.NotEqual(t, first, other)
	require.EqualValues(t, 4, e.Stats("orders", pubsub.DefaultGroup).Ready)
}
