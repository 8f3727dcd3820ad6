package streams

import (
	"testing"
	"time"

	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

func TestStatsTellTheStateOfAGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", "1", "2", "3", "4", "5")
	e.PublishDelayed("t", time.Hour, "later")
	ds := e.Claim("t", "g", "c", 3)
	e.Ack("t", "g", "c", ds[0])
	e.Nack("t", "g", "c", 0, pubsub.NackItem{ID: ds[1].ID, Attempt: 1, Delay: time.Hour})
	e.Nack("t", "g", "c", 0, pubsub.NackItem{ID: ds[2].ID, Attempt: 1, DeadLetter: true})

	s := e.Stats("t", "g")
	require.Equal(t, counts{Ready: 2, Delayed: 2, Dead: 1}, counts{s.Ready, s.Delayed, s.Pending, s.Dead})
	require.Equal(t, pubsub.Counters{Published: 6, Claimed: 3, Acked: 1, Nacked: 2, DeadLettered: 1}, s.Counters)
	require.Zero(t, s.OldestPendingAge)
	require.Less(t, s.OldestReadyAge, time.Minute)

	e.Claim("t", "g", "c", 1)
	time.Sleep(50 * time.Millisecond)
	s = e.Stats("t", "g")
	require.Equal(t, counts{Ready: 1, Delayed: 2, Pending: 1, Dead: 1}, counts{s.Ready, s.Delayed, s.Pending, s.Dead})
	require.GreaterOrEqual(t, s.OldestPendingAge, 50*time.Millisecond)
	require.GreaterOrEqual(t, s.OldestReadyAge, 50*time.Millisecond)

	require.Equal(t, counts{}, e.counts("nothing", "g"), "a topic never published to")
}

// Where Redis cannot tell a group's lag (an entry deleted after its last-delivered-id; Redis
// 6.2 never can), Stats counts the unread entries one by one.
func TestStatsCountUnreadEntriesWhenRedisHasNoLag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	published := e.Publish("t", "1", "2", "3", "4")
	e.PublishDelayed("t", time.Hour, "later")
	e.Claim("t", "g", "c", 1)
	_, err := e.C.XDel(e.Ctx, e.tk("t").stream, published[2]).Result()
	require.NoError(t, err)
	groups, err := e.C.XInfoGroups(e.Ctx, e.tk("t").stream).Result()
	require.NoError(t, err)
	require.Len(t, groups, 1)
	require.Equal(t, int64(-1), groups[0].Lag, "Redis reports no lag here")

	require.Equal(t, counts{Ready: 2, Delayed: 1, Pending: 1}, e.counts("t", "g"))
}
