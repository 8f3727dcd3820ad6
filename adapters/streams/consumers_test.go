package streams

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func TestCleanupConsumersParksPendingEntriesBeforeDeletingTheConsumer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "1", "2", "3")
	dead := e.Claim("t", "g", "dead", 2)
	alive := e.Claim("t", "g", "alive", 1)
	// Consumer idle times are Redis's own, so time must pass. idle is what the heartbeat
	// just below and the cleanup after it may take together on a loaded machine.
	const idle = time.Second
	time.Sleep(idle)
	require.Empty(t, e.Extend("t", "g", "alive", alive...), "a heartbeat just now")

	res, err := e.b.CleanupConsumers(e.Ctx, "t", "g", idle)
	require.NoError(t, err)
	require.Equal(t, CleanupResult{Removed: 1, Parked: 2}, res)
	require.Equal(t, map[string]pel{
		published[0]: {ParkedConsumer, 1}, published[1]: {ParkedConsumer, 1}, published[2]: {"alive", 1},
	}, e.pel("t", "g"), "nothing dropped; the attempts they were still count")
	cs, err := e.C.XInfoConsumers(e.Ctx, e.tk("t").stream, "g").Result()
	require.NoError(t, err)
	names := []string{}
	for _, c := range cs {
		names = append(names, c.Name)
	}
	require.ElementsMatch(t, []string{"alive", ParkedConsumer}, names, "the consumer whose entries are young stays")
	require.NotContains(t, e.Hash(e.gk("t", "g").leases), "dead")

	again := e.Claim("t", "g", "next", 10)
	require.Equal(t, adaptertest.IDs(dead), adaptertest.IDs(again))
	for _, d := range again {
		require.Equal(t, 2, d.Attempt)
	}
	require.Equal(t, counts{Pending: 3}, e.counts("t", "g"))

	_, err = e.b.CleanupConsumers(e.Ctx, "t", "g", -time.Second)
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
}

func TestCleanupConsumersWorksInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 3 })
	e.EnsureGroup("t", "g")
	e.Publish("t", "1", "2", "3", "4", "5", "6", "7")
	e.Claim("t", "g", "a", 4)
	e.Claim("t", "g", "b", 3)
	res, err := e.b.CleanupConsumers(e.Ctx, "t", "g", 0)
	require.NoError(t, err)
	require.Equal(t, CleanupResult{Removed: 2, Parked: 7}, res)
	require.Equal(t, counts{Ready: 7}, e.counts("t", "g"))
}
