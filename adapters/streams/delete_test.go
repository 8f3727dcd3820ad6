package streams

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/backendkit"
	"github.com/stretchr/testify/require"
)

// groupKeysLeft lists the keys of topic that belong to group.
func (e *env) groupKeysLeft(topic, group string) []string {
	return slices.DeleteFunc(e.Keys(topic), func(k string) bool { return !strings.HasPrefix(k, "g:"+group+":") })
}

// A subscriber's blocking Claim loop sees the delete of its group: Claim fails with
// ErrGroupDeleted (at once, or at its next probe when it waits idle), and its late ack,
// nack, extend and reclaim write nothing.
func TestDeleteGroupWhileASubscriberRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "other")
	e.Publish("t", "a", "b")
	held := e.Claim("t", "g", "c", 1)
	require.Len(t, held, 1)

	ctx, cancel := context.WithTimeout(e.Ctx, 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for {
			_, err := e.b.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "loop", Count: 10, Lease: time.Minute, Block: 500 * time.Millisecond})
			if err != nil {
				done <- err
				return
			}
		}
	}()
	require.NoError(t, e.b.DeleteGroup(e.Ctx, "t", "g"))
	require.ErrorIs(t, <-done, backend.ErrGroupDeleted)

	require.Equal(t, backend.AckResult{Stale: 1}, e.Ack("t", "g", "c", held...))
	require.Equal(t, backend.NackResult{Stale: 1}, e.Nack("t", "g", "c", 0, backend.NackItem{ID: held[0].ID, Attempt: 1}))
	require.Equal(t, []string{held[0].ID}, e.Extend("t", "g", "c", held...))
	require.Equal(t, backend.ReclaimResult{}, e.Reclaim("t", "g", 0))
	require.Empty(t, e.Stats("t", "g").Counters)
	require.Empty(t, e.groupKeysLeft("t", "g"), "no key of the deleted group came back")
	require.Equal(t, []string{"other"}, groupsOf(t, e, "t"))
	require.Len(t, e.Claim("t", "other", "c", 10), 2, "the other group keeps its messages")
	require.ErrorIs(t, e.b.DeleteGroup(e.Ctx, "t", "g"), backend.ErrGroupNotFound)

	// A new group of that name starts empty, with the next publish.
	e.EnsureGroup("t", "g")
	fresh := e.Publish("t", "c")
	require.Equal(t, fresh, adaptertest.IDs(e.Claim("t", "g", "c", 10)))
	require.Zero(t, e.Stats("t", "g").Dead)
}

// deadLetter publishes payloads and dead-letters them in group.
func (e *env) deadLetter(topic, group string, payloads ...string) []string {
	ids := e.Publish(topic, payloads...)
	ds := e.Claim(topic, group, "c", len(payloads))
	items := make([]backend.NackItem, len(ds))
	for i, d := range ds {
		items[i] = backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: "bad"}
	}
	require.Equal(e.T, len(ids), e.Nack(topic, group, "c", 0, items...).DeadLettered)
	return ids
}

// The deleted group's dead letters release their references in bounded steps (a tomb while
// more than BatchSize wait), and the other groups keep theirs.
func TestDeleteGroupReleasesItsDeadLettersInStepsAndTouchesNoOtherGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 10 })
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "keep")
	ids := e.deadLetter("t", "g", payloads("m", 35)...)
	e.Claim("t", "keep", "c", 35)
	keepIDs := ids[:3]
	for _, id := range keepIDs {
		require.Equal(t, backend.NackResult{DeadLettered: 1}, e.Nack("t", "keep", "c", 0, backend.NackItem{ID: id, Attempt: 1, DeadLetter: true}))
	}
	keepBefore := map[string]string{}
	for _, k := range e.groupKeysLeft("t", "keep") {
		keepBefore[k] = e.C.Type(e.Ctx, e.tk("t").base+":"+k).Val()
	}
	require.Len(t, e.Hash(e.tk("t").deadRefs), 35)

	require.NoError(t, e.b.DeleteGroup(e.Ctx, "t", "g"))
	refs := e.Hash(e.tk("t").deadRefs)
	require.Len(t, refs, 3, "only the other group's references are left")
	for _, id := range keepIDs {
		require.Equal(t, "1", refs[id])
	}
	require.Empty(t, e.groupKeysLeft("t", "g"))
	require.False(t, e.Exists(e.tk("t").deleting))
	keepAfter := map[string]string{}
	for _, k := range e.groupKeysLeft("t", "keep") {
		keepAfter[k] = e.C.Type(e.Ctx, e.tk("t").base+":"+k).Val()
	}
	require.Equal(t, keepBefore, keepAfter)
	require.Equal(t, int64(3), e.Stats("t", "keep").Dead)
}

// A delete interrupted after its first step (the group unregistered, its dead letters in
// their tomb) is finished by a publish to the topic, by a Reclaim on it, or by the next
// DeleteGroup of the name.
func TestAnUnfinishedDeleteIsFinishedLater(t *testing.T) {
	t.Parallel()
	for name, finish := range map[string]func(e *env){
		"publish":     func(e *env) { e.Publish("t", "x") },
		"reclaim":     func(e *env) { e.Reclaim("t", "keep", 0) },
		"deletegroup": func(e *env) { require.NoError(e.T, e.b.DeleteGroup(e.Ctx, "t", "g")) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *Options) { o.BatchSize = 10 })
			e.EnsureGroup("t", "g")
			e.EnsureGroup("t", "keep")
			e.deadLetter("t", "g", payloads("m", 25)...)
			k := e.gk("t", "g")
			res, err := deleteGroupScript.Run(e.Ctx, e.C, k.registerKeys(), "g", modeAdmin, "", 10, "0", 1000, backendkit.Millis(e.b.opts.TombstoneTTL)).Slice()
			require.NoError(t, err)
			require.Equal(t, []any{"deleted", int64(1), ""}, res)
			require.True(t, e.Exists(k.deadGone))
			require.Equal(t, []string{"keep"}, groupsOf(t, e, "t"))

			finish(e)
			require.False(t, e.Exists(k.deadGone))
			require.False(t, e.Exists(e.tk("t").deleting))
			require.Empty(t, e.Hash(e.tk("t").deadRefs))
		})
	}
}

// With delete-on-ack, entries the other groups acked while the deleted one held them back
// leave the stream with the delete.
func TestDeleteGroupWithDeleteOnAckDeletesWhatOnlyItNeeded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, deleteOnAck, func(o *Options) { o.BatchSize = 4 })
	e.EnsureGroup("t", "slow")
	e.EnsureGroup("t", "fast")
	e.Publish("t", payloads("m", 10)...)
	e.Claim("t", "slow", "c", 3)
	e.Ack("t", "fast", "c", e.Claim("t", "fast", "c", 10)...)
	require.Equal(t, int64(10), e.xlen(e.tk("t").stream))

	require.NoError(t, e.b.DeleteGroup(e.Ctx, "t", "slow"))
	require.Zero(t, e.xlen(e.tk("t").stream))
}

func TestDeleteTopicLeavesNoKey(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) {
		topic, other := e.Prefix+"-t", e.Prefix+"-other"
		e.EnsureGroup(topic, "g")
		e.EnsureGroup(topic, "h")
		require.NoError(t, e.b.Join(e.Ctx, &backend.JoinParams{Topic: topic, Group: "eph", Consumer: "c", TTL: time.Minute}))
		e.deadLetter(topic, "g", payloads("m", 15)...)
		e.PublishDelayed(topic, time.Hour, "later")
		e.Claim(topic, "h", "c", 3)
		require.NoError(t, e.b.PauseGroup(e.Ctx, topic, "h"))
		e.EnsureGroup(other, "g")
		e.Publish(other, "x")
		otherKeys := e.Keys(other)
		require.NotEmpty(t, e.lanes().LaneRecords(topic))

		require.NoError(t, e.b.DeleteTopic(e.Ctx, topic))
		require.Empty(t, e.KeysLeft(topic))
		require.False(t, e.Exists(e.tk(topic).meta), "the publish lanes' records go with meta")
		require.False(t, e.Exists(e.tk(topic).stream))
		require.Equal(t, otherKeys, e.Keys(other))
		require.ErrorIs(t, e.b.DeleteTopic(e.Ctx, topic), backend.ErrTopicNotFound)
		_, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: topic, Group: "g", Consumer: "c", Count: 1, Lease: time.Minute})
		require.ErrorIs(t, err, backend.ErrGroupDeleted)

		// A publish creates it again, as a new topic with a backlog.
		e.Publish(topic, "again")
		require.Equal(t, backend.TopicInfo{Name: topic, Groups: []string{}, Backlog: 1}, e.topicInfo(topic))
	}, func(o *Options) { o.BatchSize = 10 })
}

func TestDeleteTopicAlsoDropsAnUnfinishedGroupDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 10 })
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "other") // g is not the last group, whose delete would drop the topic at once
	e.deadLetter("t", "g", payloads("m", 25)...)
	k := e.gk("t", "g")
	_, err := deleteGroupScript.Run(e.Ctx, e.C, k.registerKeys(), "g", modeAdmin, "", 10, "0", 1000, backendkit.Millis(e.b.opts.TombstoneTTL)).Slice()
	require.NoError(t, err)
	require.True(t, e.Exists(k.deadGone))
	require.NoError(t, e.b.DeleteTopic(e.Ctx, "t"))
	require.Empty(t, e.KeysLeft("t"))
}

// Deletes while another process publishes to the topic: every publish succeeds, and what it
// stored lands in a group still registered or in the backlog of the topic created again.
func TestDeletesWhileAnotherProcessPublishes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.EnsureGroup("t", "h")
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{{Envelope: adaptertest.Envelope("x")}}}); err != nil {
				done <- err
				return
			}
		}
	}()
	require.Eventually(t, func() bool { return e.Stats("t", "h").Ready > 10 }, 5*time.Second, time.Millisecond)
	require.NoError(t, e.b.DeleteGroup(e.Ctx, "t", "g"))
	require.Eventually(t, func() bool { return e.Stats("t", "h").Ready > 20 }, 5*time.Second, time.Millisecond)
	require.NoError(t, e.b.DeleteTopic(e.Ctx, "t"))
	require.Eventually(t, func() bool { // publishes land on the topic created again
		ok, err := e.b.HasTopic(e.Ctx, "t")
		return err == nil && ok
	}, 5*time.Second, time.Millisecond)
	close(stop)
	require.NoError(t, <-done)

	require.Empty(t, groupsOf(t, e, "t"))
	require.Empty(t, e.groupKeysLeft("t", "g"))
	require.Empty(t, e.groupKeysLeft("t", "h"))
	info := e.topicInfo("t")
	require.Equal(t, info.Backlog, e.xlen(e.tk("t").stream), "the topic created again holds its backlog only")
	e.EnsureGroup("t", "new")
	require.Len(t, e.Claim("t", "new", "c", 1000), int(info.Backlog))
}
