package zset

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// listAll reads every page of state, count at a time.
func (e *env) listAll(topic, group string, state backend.MessageState, count int) []backend.MessageInfo {
	e.T.Helper()
	var out []backend.MessageInfo
	p := &backend.MessagesParams{Topic: topic, Group: group, State: state, Count: count}
	for range 100 {
		page, err := e.b.Messages(e.Ctx, p)
		require.NoError(e.T, err)
		out = append(out, page.Messages...)
		if page.Next == "" {
			return out
		}
		p.Cursor = page.Next
	}
	require.FailNow(e.T, "the listing does not end")
	return nil
}

func infoIDs(ms []backend.MessageInfo) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// Ready lists in claim order: higher priority first, then due time, then publish order, with
// each message's priority.
func TestReadyListsInClaimOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.PublishWith("t", 0, 0, "a", "b")
	e.PublishWith("t", 0, 5, "c")
	e.PublishWith("t", 0, -3, "d")
	e.PublishWith("t", 0, 5, "e")

	ms := e.listAll("t", "g", backend.StateReady, 2)
	var prios []int
	for _, m := range ms {
		prios = append(prios, m.Priority)
	}
	require.Equal(t, []int{5, 5, 0, 0, -3}, prios)
	require.Equal(t, adaptertest.IDs(e.Claim("t", "g", "c", 10)), infoIDs(ms))
}

// A delayed message that fell due but that no claim moved to the queue yet is ready, as
// Stats counts it: listed after the queue, in due order (the next claim moves it into the
// queue by priority and due time). It is deleted at once and is not delayed.
func TestADueDelayedMessageIsReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	k := e.gk("t", "g")
	later := e.PublishDelayed("t", time.Hour, "x", "y", "z")
	now := e.Publish("t", "n")
	require.NoError(t, e.C.ZAddXX(e.Ctx, k.ready, zmember(2000, mem(later[1])), zmember(1000, mem(later[0]))).Err())

	require.Equal(t, []string{now[0], later[0], later[1]}, infoIDs(e.listAll("t", "g", backend.StateReady, 1)))
	require.Equal(t, []string{later[2]}, infoIDs(e.listAll("t", "g", backend.StateDelayed, 1)))
	require.EqualValues(t, 3, e.Stats("t", "g").Ready)

	p := &backend.MessageParams{Topic: "t", Group: "g", ID: later[0]}
	m, err := e.b.Message(e.Ctx, p)
	require.NoError(t, err)
	require.Equal(t, backend.StateReady, m.State)
	require.True(t, m.Due.IsZero())
	require.ErrorIs(t, e.b.RunMessage(e.Ctx, p), backend.ErrNotDelayed)

	require.NoError(t, e.b.DeleteMessage(e.Ctx, p))
	require.NotContains(t, e.Hash(k.bodies), later[0], "freed at once")
	// The claim moves it into the queue at its due time, long past: ahead of n.
	require.Equal(t, []string{later[1], now[0]}, adaptertest.IDs(e.Claim("t", "g", "c", 10)))
}

// A delayed message is found by ID whatever its priority: by its member for the priorities
// in use among due messages, else by looking through the delayed ones.
func TestADelayedMessageOfAnyPriorityIsFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	e.PublishWith("t", 0, 3, "due")
	probed := e.PublishWith("t", time.Hour, 3, "p")
	scanned := e.PublishWith("t", time.Hour, -7, "s")
	for _, c := range []struct {
		id   string
		prio int
	}{{probed[0], 3}, {scanned[0], -7}} {
		p := &backend.MessageParams{Topic: "t", Group: "g", ID: c.id}
		m, err := e.b.Message(e.Ctx, p)
		require.NoError(t, err)
		require.Equal(t, backend.StateDelayed, m.State)
		require.Equal(t, c.prio, m.Priority)
		require.NoError(t, e.b.RunMessage(e.Ctx, p))
	}
	ds := e.Claim("t", "g", "c", 10)
	require.Len(t, ds, 3)
	require.Equal(t, scanned[0], ds[2].ID, "lowest priority last")

	// Pending and dead messages keep their priority too.
	m, err := e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: scanned[0]})
	require.NoError(t, err)
	require.Equal(t, backend.StatePending, m.State)
	require.Equal(t, -7, m.Priority)
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: ds[2].ID, Attempt: ds[2].Attempt, DeadLetter: true})
	dead := e.listAll("t", "g", backend.StateDead, 10)
	require.Len(t, dead, 1)
	require.Equal(t, -7, dead[0].Priority)
}
