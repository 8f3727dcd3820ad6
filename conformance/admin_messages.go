package conformance

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

func testMessages(t *testing.T, f Factory) {
	run(t, f, "ReadyPagedInClaimOrder", Options{}, messagesReady)
	run(t, f, "DelayedPagedInDueOrder", Options{}, messagesDelayed)
	run(t, f, "PendingPagedInExpiryOrder", Options{}, messagesPending)
	run(t, f, "DeadPagedInDeathOrder", Options{}, messagesDead)
	run(t, f, "BadCursor", Options{}, messagesBadCursor)
	run(t, f, "ShowsEachState", Options{}, messageShows)
	run(t, f, "NotFound", Options{}, messageNotFound)
	run(t, f, "NotHeldByALaterGroup", Options{}, messageOfLaterGroup)
}

// Each paging case puts pagedTotal messages of one group in one state and lists them
// pageCount at a time: four pages, the last one short.
const pagedTotal, pageCount = 7, 2

// pagedOrder is the rank of each of the pagedTotal messages in the order that sets them
// apart (due time, lease expiry, death), a fixed shuffle so that it differs from the publish
// order.
var pagedOrder = []int{3, 0, 6, 2, 5, 1, 4}

// listPaged lists the group's messages in state pageCount at a time and returns their IDs.
func listPaged(t *testing.T, a backend.Admin, topic, group string, state backend.MessageState) ([]string, []backend.MessageInfo) {
	t.Helper()
	ms, pages := listAll(t, a, backend.MessagesParams{Topic: topic, Group: group, State: state, Count: pageCount})
	require.GreaterOrEqual(t, pages, (pagedTotal+pageCount-1)/pageCount, "%d %s messages in pages of %d", len(ms), state, pageCount)
	return messageIDs(ms), ms
}

// byRank returns ids sorted by pagedOrder: the ID of rank 0 first.
func byRank(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[pagedOrder[i]] = id
	}
	return out
}

// Ready messages are listed in the order claims take them, every one once.
func messagesReady(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	ids := publishDirectInOrder(t, h, topic, pagedTotal)
	listed, _ := listPaged(t, a, topic, group, backend.StateReady)
	require.ElementsMatch(t, ids, listed)

	claimed := make([]string, 0, pagedTotal)
	for range pagedTotal {
		claimed = append(claimed, claimN(t, h, topic, group, "c", 1, time.Minute)[0].ID)
	}
	require.Equal(t, claimed, listed, "ready messages not listed in the order claims take them")
	ms, _ := listAll(t, a, backend.MessagesParams{Topic: topic, Group: group, State: backend.StateReady, Count: pageCount})
	require.Empty(t, ms, "claimed messages still listed as ready")
}

// Delayed messages are listed in the order they fall due, each with its due time.
func messagesDelayed(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	out := make([]backend.OutMessage, pagedTotal)
	for i := range out {
		out[i] = backend.OutMessage{
			Envelope: backend.Envelope{UUID: watermill.NewUUID(), Payload: []byte(strconv.Itoa(i))},
			Delay:    time.Hour + time.Duration(pagedOrder[i])*time.Minute,
		}
	}
	start := time.Now()
	res, err := h.Backend.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: inOrderOut(h, out)})
	ids := res.IDs
	require.NoError(t, err)
	end := time.Now()

	listed, ms := listPaged(t, a, topic, group, backend.StateDelayed)
	require.Equal(t, byRank(ids), listed, "delayed messages not listed in due order")
	for i, m := range ms {
		delay := time.Hour + time.Duration(i)*time.Minute
		require.WithinRange(t, m.Due, start.Add(delay-time.Second), end.Add(delay+time.Second), "due time of %s", m.ID)
	}
}

// Pending messages are listed in the order their leases expire, each with its holder.
func messagesPending(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	publishDirectInOrder(t, h, topic, pagedTotal)
	start := time.Now()
	ids := make([]string, pagedTotal)
	for i := range ids {
		lease := 10*time.Minute + time.Duration(pagedOrder[i])*time.Minute
		ids[i] = claimN(t, h, topic, group, "holder-"+strconv.Itoa(i), 1, lease)[0].ID
	}

	listed, ms := listPaged(t, a, topic, group, backend.StatePending)
	elapsed := time.Since(start)
	require.Equal(t, byRank(ids), listed, "pending messages not listed in lease expiry order")
	for _, m := range ms {
		i := slices.Index(ids, m.ID)
		require.Equal(t, "holder-"+strconv.Itoa(i), m.Consumer, "holder of %s", m.ID)
		require.Equal(t, 1, m.Attempts)
		lease := 10*time.Minute + time.Duration(pagedOrder[i])*time.Minute
		require.LessOrEqual(t, m.LeaseLeft, lease+clockSlack, "lease left of %s", m.ID)
		require.Greater(t, m.LeaseLeft, lease-elapsed-time.Second, "lease left of %s", m.ID)
	}
}

// Dead letters are listed in the order they died, each with its reason.
func messagesDead(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	publishDirectInOrder(t, h, topic, pagedTotal)
	ds := claimN(t, h, topic, group, "c", pagedTotal, time.Minute)
	ids := make([]string, pagedTotal)
	for i, d := range ds {
		ids[i] = d.ID
	}
	for _, id := range byRank(ids) { // one call each: the death order is the call order
		deadLetter(t, h, topic, group, ds[slices.Index(ids, id)], "reason of "+id)
		// A death time is kept in whole ms of the Redis clock: the next one falls in a later
		// ms, so that the order of death is not a tie for the backend to break another way.
		time.Sleep(2 * time.Millisecond)
	}

	listed, ms := listPaged(t, a, topic, group, backend.StateDead)
	require.Equal(t, byRank(ids), listed, "dead letters not listed in the order they died")
	for i, m := range ms {
		require.Equal(t, "reason of "+m.ID, m.Reason)
		if i > 0 {
			require.False(t, m.DeadAt.Before(ms[i-1].DeadAt), "dead letters listed out of DeadAt order")
		}
	}
}

// A cursor that no page returned is refused with ErrBadCursor, in every state.
func messagesBadCursor(t *testing.T, h Harness) {
	a := adminOf(t, h)
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 3)
	for _, st := range backend.States {
		for _, cursor := range []string{"not-a-cursor", "\x00\xff"} {
			_, err := a.Messages(context.Background(), &backend.MessagesParams{Topic: topic, Group: group, State: st, Cursor: cursor})
			require.ErrorIs(t, err, backend.ErrBadCursor, "state %s, cursor %q", st, cursor)
		}
	}
}
