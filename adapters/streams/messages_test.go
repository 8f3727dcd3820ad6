package streams

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/seal"
	"github.com/stretchr/testify/require"
)

// page lists one page of group's messages in state.
func (e *env) page(topic, group string, state backend.MessageState, cursor string, count int) backend.MessagePage {
	e.T.Helper()
	p, err := e.b.Messages(e.Ctx, &backend.MessagesParams{Topic: topic, Group: group, State: state, Cursor: cursor, Count: count})
	require.NoError(e.T, err)
	return p
}

// listAll pages through group's messages in state, count at a time, and returns their IDs.
// between runs after each page.
func (e *env) listAll(topic, group string, state backend.MessageState, count int, between func()) []string {
	e.T.Helper()
	var ids []string
	cursor := ""
	for range 1000 {
		p := e.page(topic, group, state, cursor, count)
		require.LessOrEqual(e.T, len(p.Messages), count)
		for _, m := range p.Messages {
			require.Equal(e.T, state, m.State, m.ID)
			ids = append(ids, m.ID)
		}
		if p.Next == "" {
			return ids
		}
		cursor = p.Next
		if between != nil {
			between()
		}
	}
	e.T.Fatal("the listing did not end")
	return nil
}

func messageIDs(ms []backend.MessageInfo) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// eachState sets up a group holding a message in every state: returns the IDs by state.
func (e *env) eachState(topic, group string) map[backend.MessageState][]string {
	e.T.Helper()
	e.EnsureGroup(topic, group)
	ids := e.Publish(topic, "a", "b", "c", "d")
	ds := e.Claim(topic, group, "c1", 4)
	e.Nack(topic, group, "c1", 0,
		backend.NackItem{ID: ds[0].ID, Attempt: 1, Delay: time.Hour},
		backend.NackItem{ID: ds[1].ID, Attempt: 1},
		backend.NackItem{ID: ds[2].ID, Attempt: 1, DeadLetter: true, Reason: "bad"})
	ids = append(ids, e.Publish(topic, "e", "f")...)
	later := e.PublishDelayed(topic, time.Hour, "later")
	return map[backend.MessageState][]string{
		backend.StateReady:   {ids[1], ids[4], ids[5]}, // by due time: the retry was due first
		backend.StateDelayed: {ids[0], later[0]},
		backend.StatePending: {ids[3]},
		backend.StateDead:    {ids[2]},
	}
}

func TestMessagesListsEveryStateInDeliveryOrder(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) {
		topic := e.Prefix + "-t"
		want := e.eachState(topic, "g")
		now := e.redisNow()
		for _, state := range backend.States {
			p := e.page(topic, "g", state, "", 10)
			require.Equal(t, want[state], messageIDs(p.Messages), state)
			require.Empty(t, p.Next, state)
		}

		ready := e.page(topic, "g", backend.StateReady, "", 10).Messages
		require.Equal(t, adaptertest.Envelope("e"), ready[1].Envelope)
		require.Equal(t, []int{1, 0, 0}, []int{ready[0].Attempts, ready[1].Attempts, ready[2].Attempts})
		require.True(t, ready[0].Due.IsZero())

		delayed := e.page(topic, "g", backend.StateDelayed, "", 10).Messages
		require.Equal(t, 1, delayed[0].Attempts)
		require.Equal(t, 0, delayed[1].Attempts)
		require.Equal(t, adaptertest.Envelope("later"), delayed[1].Envelope)
		for _, m := range delayed {
			require.WithinDuration(t, now.Add(time.Hour), m.Due, 10*time.Second)
		}

		pending := e.page(topic, "g", backend.StatePending, "", 10).Messages[0]
		require.Equal(t, "c1", pending.Consumer)
		require.Equal(t, 1, pending.Attempts)
		require.Equal(t, adaptertest.Envelope("d"), pending.Envelope)
		require.Greater(t, pending.LeaseLeft, 50*time.Second)
		require.LessOrEqual(t, pending.LeaseLeft, time.Minute)
		require.WithinDuration(t, now, pending.Since, 10*time.Second)

		dead := e.page(topic, "g", backend.StateDead, "", 10).Messages[0]
		require.Equal(t, "bad", dead.Reason)
		require.Equal(t, 1, dead.Attempts)
		require.Equal(t, adaptertest.Envelope("c"), dead.Envelope)
		require.WithinDuration(t, now, dead.DeadAt, 10*time.Second)

		// Message shows each, wherever it is.
		for state, ids := range want {
			for _, id := range ids {
				m, err := e.b.Message(e.Ctx, &backend.MessageParams{Topic: topic, Group: "g", ID: id})
				require.NoError(t, err)
				require.Equal(t, state, m.State, id)
				require.Equal(t, id, m.ID)
				require.Equal(t, "g", m.Group)
			}
		}
	})
}

func TestMessagesPageAcrossSourcesWithoutRepeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", payloads("m", 12)...)
	ds := e.Claim("t", "g", "c", 5)
	items := make([]backend.NackItem, len(ds))
	for i, d := range ds {
		items[i] = backend.NackItem{ID: d.ID, Attempt: 1}
	}
	e.Nack("t", "g", "c", 0, items...) // 5 due retries beside 7 unread entries
	e.Publish("t", payloads("u", 7)...)
	ready := e.listAll("t", "g", backend.StateReady, 3, nil)
	require.Len(t, ready, 19)
	requireDistinct(t, ready)

	// Delayed: retries not due and unread entries with a delay.
	ds = e.Claim("t", "g", "c", 6)
	items = make([]backend.NackItem, len(ds))
	for i, d := range ds {
		items[i] = backend.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour}
	}
	e.Nack("t", "g", "c", 0, items...)
	e.PublishDelayed("t", 2*time.Hour, payloads("d", 7)...)
	delayed := e.listAll("t", "g", backend.StateDelayed, 4, nil)
	require.Len(t, delayed, 13)
	requireDistinct(t, delayed)

	// Pending: consumers by lease deadline, entries in order.
	for _, c := range []string{"c3", "c1", "c2"} {
		e.Claim("t", "g", c, 4)
	}
	pending := e.listAll("t", "g", backend.StatePending, 5, nil)
	require.Len(t, pending, 12)
	requireDistinct(t, pending)

	// Dead letters.
	e.EnsureGroup("t", "d")
	e.deadLetter("t", "d", payloads("x", 11)...)
	dead := e.listAll("t", "d", backend.StateDead, 5, nil)
	require.Len(t, dead, 11)
	requireDistinct(t, dead)
}

// Pending messages are listed in lease expiry order as streams keeps leases, per consumer:
// consumers by deadline (another program's consumer, of which relq has no lease, by
// pubsub.LeaseDefault), each one's entries by ID; the parking consumer's are not pending.
func TestPendingMessagesAreListedByTheirConsumersDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", payloads("m", 10)...)
	long := adaptertest.IDs(e.ClaimLease("t", "g", "long", 2, 2*time.Hour))
	short := adaptertest.IDs(e.ClaimLease("t", "g", "short", 3, time.Minute))
	xs, err := e.C.XReadGroup(e.Ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "other",
		Streams: []string{e.tk("t").stream, ">"}, Count: 2}).Result()
	require.NoError(t, err)
	var other []string
	for _, m := range xs[0].Messages {
		other = append(other, m.ID)
	}
	mid := adaptertest.IDs(e.ClaimLease("t", "g", "mid", 2, 10*time.Minute))
	parked := e.Claim("t", "g", "c", 1)[0]
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: parked.ID, Attempt: 1, Delay: time.Hour})

	want := append(append(append(other, short...), mid...), long...)
	require.Equal(t, want, e.listAll("t", "g", backend.StatePending, 2, nil))
	require.Equal(t, want, e.listAll("t", "g", backend.StatePending, 100, nil))
}

// Messages that leave the state between two pages are skipped, none is listed twice, and
// those still there are all listed.
func TestMessagesPagingWhileClaimsGoOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", payloads("m", 20)...)
	claimed := map[string]bool{}
	listed := e.listAll("t", "g", backend.StateReady, 4, func() {
		for _, d := range e.Claim("t", "g", "c", 2) {
			claimed[d.ID] = true
		}
	})
	requireDistinct(t, listed)
	seen := map[string]bool{}
	for _, id := range listed {
		seen[id] = true
	}
	for _, id := range ids {
		require.True(t, seen[id] || claimed[id], "%s neither listed nor claimed", id)
	}
}

func requireDistinct(t *testing.T, ids []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		require.False(t, seen[id], "%s listed twice", id)
		seen[id] = true
	}
}

func TestMessagesRefusesBadCursorsAndUnknownGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.Publish("t", payloads("m", 5)...)
	next := e.page("t", "g", backend.StateReady, "", 2).Next
	require.NotEmpty(t, next)
	for _, bad := range []struct {
		state  backend.MessageState
		cursor string
	}{
		{backend.StateReady, "garbage!"},
		{backend.StateDead, next},                                              // another state's cursor
		{backend.StateReady, encodeCursor("ready", []string{"1", "", "", ""})}, // a score without a member
		{backend.StateReady, encodeCursor("ready", []string{"", "", "1-x", ""})},
		{backend.StateDead, encodeCursor("dead", []string{"01-1", "", "", ""})},
	} {
		_, err := e.b.Messages(e.Ctx, &backend.MessagesParams{Topic: "t", Group: "g", State: bad.state, Cursor: bad.cursor})
		require.ErrorIs(t, err, backend.ErrBadCursor, "%s %q", bad.state, bad.cursor)
	}
	_, err := e.b.Messages(e.Ctx, &backend.MessagesParams{Topic: "t", Group: "g", State: "lost"})
	require.Error(t, err)
	_, err = e.b.Messages(e.Ctx, &backend.MessagesParams{Topic: "t", Group: "nope", State: backend.StateReady})
	require.ErrorIs(t, err, backend.ErrGroupNotFound)
	_, err = e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "nope", ID: "1-1"})
	require.ErrorIs(t, err, backend.ErrGroupNotFound)
	require.Empty(t, e.groupKeysLeft("t", "nope"))
}

func TestMessageNotHeldIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a", "b")
	e.Ack("t", "g", "c", e.Claim("t", "g", "c", 1)...)
	for _, id := range []string{ids[0], "1-1", "99999999999999-0", "nonsense", ""} {
		_, err := e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: id})
		require.ErrorIs(t, err, backend.ErrMessageNotFound, id)
		require.ErrorIs(t, e.b.DeleteMessage(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: id}), backend.ErrMessageNotFound, id)
		require.ErrorIs(t, e.b.RunMessage(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: id}), backend.ErrMessageNotFound, id)
	}
}

func TestMessageShowsAMissingBodyAndACorruptEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a")
	require.NoError(t, seal.Open(e.b).InjectCorrupt(e.Ctx, "t", "g", []byte("junk")))
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, seal.Open(e.b).DeleteBody(e.Ctx, "t", ids[0]))

	m, err := e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: ids[0]})
	require.NoError(t, err)
	require.True(t, m.BodyMissing)
	require.Equal(t, backend.StatePending, m.State)
	m, err = e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: ds[1].ID})
	require.NoError(t, err)
	require.ErrorIs(t, m.Err, backend.ErrCorruptEntry)
	require.Equal(t, []byte("junk"), m.Raw)
}

func TestDeleteMessageRemovesTheGroupsCopyOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.eachState("t", "g")
	e.EnsureGroupFromOldest("t", "other")
	del := func(id string) {
		t.Helper()
		require.NoError(t, e.b.DeleteMessage(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: id}))
		_, err := e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: id})
		require.ErrorIs(t, err, backend.ErrMessageNotFound, id)
	}
	pending := want[backend.StatePending][0]
	del(pending)
	require.Equal(t, backend.AckResult{Stale: 1}, e.Ack("t", "g", "c1", backend.Delivery{ID: pending, Attempt: 1}), "the holder's ack is stale")
	del(want[backend.StateDead][0])
	require.Zero(t, e.Stats("t", "g").Dead)
	require.False(t, e.Exists(e.tk("t").deadRefs))
	del(want[backend.StateDelayed][0]) // a parked retry
	del(want[backend.StateDelayed][1]) // an unread delayed entry
	unread := want[backend.StateReady][1]
	del(unread)
	require.NotContains(t, messageIDs(e.page("t", "g", backend.StateReady, "", 10).Messages), unread)

	// The group's next claim drops the unread entry it deleted; the other group still has it.
	got := adaptertest.IDs(e.Claim("t", "g", "c", 10))
	require.Equal(t, []string{want[backend.StateReady][0], want[backend.StateReady][2]}, got)
	require.False(t, e.Exists(e.gk("t", "g").marks), "marks behind the group's position go")
	require.Contains(t, adaptertest.IDs(e.Claim("t", "other", "c", 10)), unread)
	require.Equal(t, counts{Pending: 2}, e.counts("t", "g"))
}

func TestDeleteMessageWithDeleteOnAckDeletesWhatNoGroupNeeds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, deleteOnAck)
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a", "b")
	e.Claim("t", "g", "c", 1)
	require.NoError(t, e.b.DeleteMessage(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: ids[0]}))
	require.NoError(t, e.b.DeleteMessage(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: ids[1]}))
	require.Equal(t, int64(1), e.xlen(e.tk("t").stream), "the unread one waits for the claim that passes it")
	require.Empty(t, e.Claim("t", "g", "c", 10))
	require.Zero(t, e.xlen(e.tk("t").stream))
}

func TestRunMessageMakesADelayedMessageOfTheGroupDueNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.eachState("t", "g")
	e.EnsureGroupFromOldest("t", "other")
	run := func(id string) error {
		return e.b.RunMessage(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: id})
	}
	for _, state := range []backend.MessageState{backend.StateReady, backend.StatePending, backend.StateDead} {
		require.ErrorIs(t, run(want[state][0]), backend.ErrNotDelayed, state)
	}
	for _, id := range want[backend.StateDelayed] {
		require.NoError(t, run(id))
		m, err := e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: id})
		require.NoError(t, err)
		require.Equal(t, backend.StateReady, m.State)
	}
	require.Empty(t, e.page("t", "g", backend.StateDelayed, "", 10).Messages)
	got := adaptertest.IDs(e.Claim("t", "g", "c", 10))
	require.ElementsMatch(t, append(want[backend.StateReady], want[backend.StateDelayed]...), got)

	// The other group's copy of the delayed publish is still delayed.
	later := want[backend.StateDelayed][1]
	require.NotContains(t, adaptertest.IDs(e.Claim("t", "other", "c", 10)), later)
	m, err := e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "other", ID: later})
	require.NoError(t, err)
	require.Equal(t, backend.StateDelayed, m.State)
}
