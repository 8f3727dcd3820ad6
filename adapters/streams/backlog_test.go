package streams

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/backendkit"
	"github.com/stretchr/testify/require"
)

func TestTheFirstGroupTakesTheBacklogWhateverFromOldestSays(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) {
		topic := e.Prefix + "-t"
		backlog := e.Publish(topic, "a", "b")
		e.EnsureGroup(topic, "first") // not FromOldest
		e.EnsureGroup(topic, "second")
		fresh := e.Publish(topic, "c")

		require.Equal(t, append(backlog, fresh...), adaptertest.IDs(e.Claim(topic, "first", "c", 10)))
		require.Equal(t, fresh, adaptertest.IDs(e.Claim(topic, "second", "c", 10)))
		require.Equal(t, int64(3), e.Stats(topic, "first").Counters.Published)
		require.Equal(t, int64(1), e.Stats(topic, "second").Counters.Published)
	})
}

func TestAnEphemeralFirstGroupTakesTheBacklogToo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	backlog := e.Publish("t", "a", "b")
	require.NoError(t, e.b.Join(e.Ctx, &backend.JoinParams{Topic: "t", Group: "reply", Consumer: "c", TTL: time.Minute}))
	require.Equal(t, backlog, adaptertest.IDs(e.Claim("t", "reply", "c", 10)))
}

func TestTheBacklogIsBoundedInLengthAndInTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BacklogLimit = 150; o.BacklogTTL = time.Hour })
	var last []string
	for range 10 {
		last = e.Publish("t", payloads("m", 100)...)
	}
	n := e.xlen(e.tk("t").stream)
	require.Equal(t, int64(150), n, "the backlog keeps exactly BacklogLimit entries")
	require.Equal(t, n, e.topicInfo("t").Backlog)
	for _, key := range []string{e.tk("t").stream, e.tk("t").published, e.tk("t").meta} {
		ttl := e.C.PTTL(e.Ctx, key).Val()
		require.True(t, ttl > 59*time.Minute && ttl <= time.Hour, "%s expires in %v", key, ttl)
	}

	// The first group takes what is left, the latest entries, and the topic lives for good.
	e.EnsureGroup("t", "g")
	ds := e.Claim("t", "g", "c", 1000)
	require.Len(t, ds, int(n))
	require.Equal(t, last, adaptertest.IDs(ds[len(ds)-100:]))
	for _, key := range []string{e.tk("t").stream, e.tk("t").published, e.tk("t").meta} {
		require.Equal(t, time.Duration(-1), e.C.PTTL(e.Ctx, key).Val(), "%s still expires", key)
	}
	require.Zero(t, e.topicInfo("t").Backlog, "no backlog while the topic has a group")
}

func TestABacklogExpiresWithItsKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BacklogTTL = 50 * time.Millisecond })
	e.Publish("t", "a")
	require.Eventually(t, func() bool { return len(e.Keys("t")) == 0 }, 5*time.Second, 10*time.Millisecond)
	_, err := e.b.Topic(e.Ctx, "t")
	require.ErrorIs(t, err, backend.ErrTopicNotFound)
}

// Nothing published while the topic had a group is backlog, read or not: the last group's
// delete leaves no key, and a later first group takes only what came after.
func TestWhatWasPublishedWhileTheTopicHadAGroupIsNoBacklog(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) {
		topic := e.Prefix + "-t"
		e.EnsureGroup(topic, "fast")
		e.EnsureGroup(topic, "slow")
		e.Publish(topic, payloads("m", 6)...)
		e.Claim(topic, "fast", "c", 4)
		e.Claim(topic, "slow", "c", 1)
		require.NoError(t, e.b.DeleteGroup(e.Ctx, topic, "fast"))
		require.NoError(t, e.b.DeleteGroup(e.Ctx, topic, "slow"))
		require.Empty(t, e.KeysLeft(topic), "the last group's delete left keys of a topic with no backlog")

		later := e.Publish(topic, "a", "b")
		require.Equal(t, backend.TopicInfo{Name: topic, Groups: []string{}, Backlog: 2}, e.topicInfo(topic))
		e.EnsureGroupFromOldest(topic, "next")
		require.Equal(t, counts{Ready: 2}, e.counts(topic, "next"))
		require.Equal(t, later, adaptertest.IDs(e.Claim(topic, "next", "c", 10)))
	})
}

// While another deleted group's dead letters are still being released, the last group's
// delete keeps the stream: what was published until then is trimmed in steps, and only
// what comes after is backlog.
func TestTheLastGroupsEntriesAreTrimmedInStepsWhileADeleteIsUnfinished(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 2 }) // several steps
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "h")
	e.deadLetter("t", "g", payloads("m", 5)...)
	e.Publish("t", payloads("n", 3)...)
	for _, group := range []string{"g", "h"} { // unregister only: g's dead letters stay in its tomb
		k := e.gk("t", group)
		_, err := deleteGroupScript.Run(e.Ctx, e.C, k.registerKeys(), group, modeAdmin, "", 2, "0", 60000, backendkit.Millis(e.b.opts.TombstoneTTL)).Slice()
		require.NoError(t, err)
	}
	require.True(t, e.Exists(e.gk("t", "g").deadGone))
	require.Equal(t, int64(8), e.xlen(e.tk("t").stream))
	_, err := e.b.Topic(e.Ctx, "t")
	require.ErrorIs(t, err, backend.ErrTopicNotFound, "what was published while the topic had groups is no backlog")

	later := e.Publish("t", "later") // finishes the deletes (tidy)
	require.False(t, e.Exists(e.gk("t", "g").deadGone))
	require.Equal(t, int64(1), e.xlen(e.tk("t").stream))
	require.Equal(t, int64(1), e.topicInfo("t").Backlog)
	e.EnsureGroup("t", "first")
	require.Equal(t, later, adaptertest.IDs(e.Claim("t", "first", "c", 10)))
}

func TestATopicLeftWithNoGroupAndNoBacklogLeavesNoKey(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) {
		topic := e.Prefix + "-t"
		e.EnsureGroup(topic, "g")
		e.Publish(topic, "a", "b")
		e.PublishDelayed(topic, time.Hour, "later")
		ds := e.Claim(topic, "g", "c", 10)
		e.Nack(topic, "g", "c", 0, backend.NackItem{ID: ds[0].ID, Attempt: 1, DeadLetter: true, Reason: "bad"})
		e.Ack(topic, "g", "c", ds[1:]...)
		require.NotEmpty(t, e.Keys(topic))

		require.NoError(t, e.b.DeleteGroup(e.Ctx, topic, "g"))
		require.Empty(t, e.KeysLeft(topic))
		require.False(t, e.Exists(e.tk(topic).stream))
		_, err := e.b.Topic(e.Ctx, topic)
		require.ErrorIs(t, err, backend.ErrTopicNotFound)
	})
}

// Redis is told how many entries come before the backlog, so it knows the first group's lag
// (XINFO GROUPS), and Stats need not count the unread entries one by one.
func TestTheFirstGroupsLagIsKnown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BacklogLimit = 150 })
	for range 3 {
		e.Publish("t", payloads("m", 100)...)
	}
	e.EnsureGroup("t", "g")
	groups, err := e.C.XInfoGroups(e.Ctx, e.tk("t").stream).Result()
	require.NoError(t, err)
	require.Equal(t, e.xlen(e.tk("t").stream), groups[0].Lag)
	require.Equal(t, e.xlen(e.tk("t").stream), e.Stats("t", "g").Ready)
}

// A group that another program creates on a backlog (watermill-redisstream's XGROUP CREATE)
// is durable: the next publish makes the topic live for good.
func TestAGroupCreatedByAnotherProgramEndsTheBacklogsExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, watermillFormat)
	topic := e.Prefix + "-t"
	e.Publish(topic, "a")
	require.Greater(t, e.C.PTTL(e.Ctx, topic).Val(), time.Duration(0))
	require.NoError(t, e.C.XGroupCreate(e.Ctx, topic, "watermill", "0").Err())
	e.Publish(topic, "b")
	require.Equal(t, time.Duration(-1), e.C.PTTL(e.Ctx, topic).Val())
	require.Equal(t, time.Duration(-1), e.C.PTTL(e.Ctx, e.tk(topic).published).Val())
}

func TestABacklogOverItsLimitShrinksABatchAtATime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BacklogLimit = 1000 })
	e.Publish("t", payloads("m", 500)...)
	// The same topic with a lower limit: each publish trims at most its batch and BatchSize
	// more (an exact trim costs what it removes), down to the limit.
	lower, err := New(e.C, Options{Prefix: e.Prefix, BacklogLimit: 10, BatchSize: 100})
	require.NoError(t, err)
	publish := func() {
		_, err := lower.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{{Envelope: backend.Envelope{UUID: "u"}}}})
		require.NoError(t, err)
	}
	publish()
	require.Equal(t, int64(400), e.xlen(e.tk("t").stream))
	for range 4 {
		publish()
	}
	require.Equal(t, int64(10), e.xlen(e.tk("t").stream))
}
