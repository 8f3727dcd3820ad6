package list

import (
	"fmt"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/stretchr/testify/require"
)

// The ready LIST is read by position: a page may start no deeper than engine.AdminDepth from
// the consume end, nor may a search by ID look further; both say so with ErrTooDeep, and what
// claims bring nearer is reachable again.
func TestReadyMessagesAreReachableToADepth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	msgs := make([]backend.OutMessage, engine.AdminDepth+5)
	for i := range msgs {
		msgs[i] = backend.OutMessage{Envelope: adaptertest.Envelope(fmt.Sprint(i))}
	}
	res, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: "t", Messages: msgs})
	ids := res.IDs
	require.NoError(t, err)
	require.Len(t, ids, len(msgs))

	list := func(cursor string) (backend.MessagePage, error) {
		return e.b.Messages(e.Ctx, &backend.MessagesParams{Topic: "t", Group: "g", State: backend.StateReady, Cursor: cursor, Count: 1000})
	}
	var cursor string
	for i := range engine.AdminDepth / 1000 {
		p, err := list(cursor)
		require.NoError(t, err)
		require.Len(t, p.Messages, 1000)
		require.Equal(t, ids[i*1000], p.Messages[0].ID, "delivery order")
		require.NotEmpty(t, p.Next)
		cursor = p.Next
	}
	_, err = list(cursor)
	require.ErrorIs(t, err, backend.ErrTooDeep)
	require.ErrorContains(t, err, "10000")

	deepest := ids[engine.AdminDepth]
	msg := &backend.MessageParams{Topic: "t", Group: "g", ID: deepest}
	_, err = e.b.Message(e.Ctx, msg)
	require.ErrorIs(t, err, backend.ErrTooDeep)
	require.ErrorIs(t, e.b.DeleteMessage(e.Ctx, msg), backend.ErrTooDeep)
	m, err := e.b.Message(e.Ctx, &backend.MessageParams{Topic: "t", Group: "g", ID: ids[engine.AdminDepth-1]})
	require.NoError(t, err)
	require.Equal(t, backend.StateReady, m.State)

	// Claims bring the rest within reach; the cursor resumes where it was.
	e.claimAll("t", "g", "c", 10)
	p, err := list(cursor)
	require.NoError(t, err)
	require.Len(t, p.Messages, 5)
	require.Equal(t, deepest, p.Messages[0].ID)
	require.Empty(t, p.Next)
	m, err = e.b.Message(e.Ctx, msg)
	require.NoError(t, err)
	require.Equal(t, backend.StateReady, m.State)
}

// An entry that BLMOVE moved to processing, whose consumer died before it was leased, shows
// as pending held by nobody; deleted, it is dropped when Reclaim leases it.
func TestAStagedMessageIsPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ids := e.Publish("t", "a")
	k := e.gk("t", "g")
	require.NoError(t, e.C.LMove(e.Ctx, k.ready, k.processing, "RIGHT", "LEFT").Err())

	p := &backend.MessageParams{Topic: "t", Group: "g", ID: ids[0]}
	m, err := e.b.Message(e.Ctx, p)
	require.NoError(t, err)
	require.Equal(t, backend.StatePending, m.State)
	require.Empty(t, m.Consumer)
	require.Equal(t, "a", string(m.Envelope.Payload))

	require.NoError(t, e.b.DeleteMessage(e.Ctx, p))
	require.Equal(t, 0, e.Reclaim("t", "g", 0).Orphans, "dropped, not leased")
	require.Empty(t, e.Hash(k.topic.bodies))
	require.Empty(t, e.Hash(k.retries))
	_, err = e.b.Message(e.Ctx, p)
	require.ErrorIs(t, err, backend.ErrMessageNotFound)
}

// A delayed message that fell due stays delayed until a claim or Reclaim promotes it, as
// Stats counts it; RunMessage promotes it at once.
func TestADueDelayedMessageIsDelayedUntilPromoted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ids := e.PublishDelayed("t", time.Hour, "a")
	k := e.gk("t", "g")
	require.NoError(t, e.C.ZAddXX(e.Ctx, k.delayed, zmember(1000, ids[0])).Err())

	p := &backend.MessageParams{Topic: "t", Group: "g", ID: ids[0]}
	m, err := e.b.Message(e.Ctx, p)
	require.NoError(t, err)
	require.Equal(t, backend.StateDelayed, m.State)
	require.Equal(t, time.UnixMilli(1000), m.Due)
	require.EqualValues(t, 1, e.Stats("t", "g").Delayed)

	require.NoError(t, e.b.RunMessage(e.Ctx, p))
	m, err = e.b.Message(e.Ctx, p)
	require.NoError(t, err)
	require.Equal(t, backend.StateReady, m.State)
	require.True(t, m.Due.IsZero())
}
