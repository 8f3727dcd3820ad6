package streams

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
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
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: ds[1].ID, Attempt: 1, Delay: time.Hour})
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: ds[2].ID, Attempt: 1, DeadLetter: true})

	s := e.Stats("t", "g")
	require.Equal(t, counts{Ready: 2, Delayed: 2, Dead: 1}, counts{s.Ready, s.Delayed, s.Pending, s.Dead})
	require.Equal(t, backend.Counters{Published: 6, Claimed: 3, Acked: 1, Nacked: 2, DeadLettered: 1}, s.Counters)
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

// claimAll claims until a call returns nothing or n deliveries are in, reading past parked
// delayed entries (a claim stops at Options.BatchSize entries read).
func (e *env) claimAll(topic, group, consumer string, n int) []backend.Delivery {
	e.T.Helper()
	var out []backend.Delivery
	for range 100 {
		ds := e.Claim(topic, group, consumer, n-len(out))
		out = append(out, ds...)
		if len(out) >= n {
			break
		}
		if len(ds) == 0 && e.Stats(topic, group).Ready == 0 {
			break
		}
	}
	return out
}

// Many more delayed messages than stats.lua looks at one by one (statsWindow): the counts
// come from ZCOUNTs, and are exact in each of these states.
func TestStatsCountManyDelayedMessagesExactly(t *testing.T) {
	t.Parallel()
	require.Less(t, statsWindow, 300, "the test needs more delayed messages than the window")
	e := newEnv(t, func(o *Options) { o.BatchSize = 200 })
	e.EnsureGroup("t", "g")

	// Nobody consumed yet: every delayed message is unread, the ready ones lie after them.
	e.PublishDelayed("t", time.Hour, payloads("later", 500)...)
	first := e.Publish("t", "a", "b", "c")
	e.PublishDelayed("t", 2*time.Hour, payloads("latest", 300)...)
	require.Equal(t, counts{Ready: 3, Delayed: 800}, e.counts("t", "g"))

	// Ready ones before the delayed ones: the oldest ready age is exact.
	e.EnsureGroup("t2", "g")
	e.Publish("t2", payloads("now", 150)...)
	e.PublishDelayed("t2", time.Hour, payloads("later", 400)...)
	time.Sleep(30 * time.Millisecond)
	s := e.Stats("t2", "g")
	require.Equal(t, counts{Ready: 150, Delayed: 400}, counts{s.Ready, s.Delayed, s.Pending, s.Dead})
	require.GreaterOrEqual(t, s.OldestReadyAge, 30*time.Millisecond)
	require.Less(t, s.OldestReadyAge, time.Minute)

	// A consumer read past the first 500 (parked in the retry ZSET) and some of the rest.
	ds := e.claimAll("t", "g", "c", 3)
	require.Equal(t, first, adaptertest.IDs(ds))
	require.Equal(t, counts{Delayed: 800, Pending: 3}, e.counts("t", "g"))
	require.GreaterOrEqual(t, len(e.retry("t", "g")), 500)

	// More published after the group's position: part of the delayed messages is parked,
	// part unread.
	e.PublishDelayed("t", time.Hour, payloads("more", 250)...)
	e.Publish("t", "d", "e")
	require.Equal(t, counts{Ready: 2, Delayed: 1050, Pending: 3}, e.counts("t", "g"))

	// Another group on the same topic, created from the oldest: all of it is unread there.
	e.EnsureGroupFromOldest("t", "replay")
	require.Equal(t, counts{Ready: 5, Delayed: 1050}, e.counts("t", "replay"))
}

// The split between ready and delayed is estimated when neither set fits in the window, but
// the total is always exact, and the estimate is off by at most the nacks with a delay pending.
func TestStatsEstimateKeepsTheTotalExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 200 })
	e.EnsureGroup("t", "g")
	e.PublishDelayed("t", time.Hour, payloads("later", 300)...)
	e.Publish("t", "a", "b")
	ds := e.claimAll("t", "g", "c", 2)
	require.Len(t, ds, 2)
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: ds[0].ID, Attempt: 1, Delay: time.Hour})
	e.PublishDelayed("t", time.Hour, payloads("more", 250)...)
	e.Publish("t", "c")

	s := e.Stats("t", "g")
	require.Equal(t, int64(1+1+300+250), s.Ready+s.Delayed, "unread and parked, all of them")
	require.Equal(t, int64(1), s.Pending)
	require.InDelta(t, 1, s.Ready, 1, "one nack delay pending")
	require.InDelta(t, 551, s.Delayed, 1)
}

// Where Redis cannot tell the lag and more entries are unread than stats.lua counts one by one
// (statsCountCap), Ready still counts them all: here the group has read none, so the stream's
// length is the answer.
func TestStatsCountUnreadBeyondTheCapWithoutLag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	n := statsCountCap + 200
	var published []string
	for i := 0; i < n; i += 500 {
		published = append(published, e.Publish("t", payloads("x", min(500, n-i))...)...)
	}
	_, err := e.C.XDel(e.Ctx, e.tk("t").stream, published[7]).Result()
	require.NoError(t, err)
	groups, err := e.C.XInfoGroups(e.Ctx, e.tk("t").stream).Result()
	require.NoError(t, err)
	require.Equal(t, int64(-1), groups[0].Lag, "Redis reports no lag here")

	require.Equal(t, counts{Ready: int64(n - 1)}, e.counts("t", "g"))
}

// Past the cap, with part of the stream read, Redis 7 gives the stream's entries-added less
// the group's entries-read: too high by the entries deleted after the group's position.
func TestStatsEstimateUnreadBeyondTheCapFromEntriesRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", payloads("read", 10)...)
	require.Len(t, e.Claim("t", "g", "c", 5), 5)
	n := statsCountCap + 200
	var unread []string
	for i := 0; i < n; i += 500 {
		unread = append(unread, e.Publish("t", payloads("x", min(500, n-i))...)...)
	}
	_, err := e.C.XDel(e.Ctx, e.tk("t").stream, unread[7]).Result()
	require.NoError(t, err)
	groups, err := e.C.XInfoGroups(e.Ctx, e.tk("t").stream).Result()
	require.NoError(t, err)
	require.Equal(t, int64(-1), groups[0].Lag, "Redis reports no lag here")
	if groups[0].EntriesRead <= 0 {
		t.Skip("the server reports no entries-read (Redis 6.2): Ready saturates at statsCountCap")
	}

	s := e.Stats("t", "g")
	require.Equal(t, int64(5), s.Pending)
	require.Equal(t, int64(5+n), s.Ready, "5 unread before the cut and n after it, one deleted counted")
}

// An unread delayed entry that RunMessage made due counts as ready for its group, whether
// Stats looks at it among the first unread entries or among the topic's delayed ones.
func TestStatsCountADelayedEntryMadeDueAsReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "other")
	early := e.PublishDelayed("t", time.Hour, "a", "b")
	e.Publish("t", payloads("m", statsWindow+50)...) // the unread window ends before the next
	late := e.PublishDelayed("t", time.Hour, "c", "d")
	for _, id := range []string{early[0], late[0]} {
		require.NoError(t, e.b.RunMessage(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: id}))
	}
	require.Equal(t, counts{Ready: statsWindow + 52, Delayed: 2}, e.counts("t", "g"))
	require.Equal(t, counts{Ready: statsWindow + 50, Delayed: 4}, e.counts("t", "other"), "another group's copies stay delayed")
}
