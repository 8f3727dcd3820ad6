package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testMessageOps(t *testing.T, f Factory) {
	run(t, f, "DeleteInEachState", Options{}, messageDelete)
	run(t, f, "RunDelayedNow", Options{}, messageRun)
	run(t, f, "RequeueAndPurgeDeadLetters", Options{}, messageDeadLetters)
}

// namedMessage is a message whose payload is its name, published with delay.
func namedMessage(name string, delay time.Duration) backend.OutMessage {
	return backend.OutMessage{Envelope: backend.Envelope{UUID: watermill.NewUUID(), Payload: []byte(name)}, Delay: delay}
}

// deadLetterOne claims the group's only ready message and dead-letters it with reason.
func deadLetterOne(t *testing.T, h Harness, topic, group, reason string) {
	t.Helper()
	deadLetter(t, h, topic, group, claimN(t, h, topic, group, "c", 1, time.Minute)[0], reason)
}

// A message deleted from a group, in any state, is never delivered to that group again, nor
// listed, nor shown; the holder of a deleted pending one can still ack it, harmlessly.
// Another group of the topic keeps its copy and receives it intact.
func messageDelete(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic := topicName()
	const trimmed, whole = "trimmed", "whole"
	const holderLease = 500 * time.Millisecond
	ensureGroup(t, h, topic, trimmed)
	ensureGroup(t, h, topic, whole)
	names := map[string]string{} // UUID -> name
	publishNamed := func(name string, delay time.Duration) string {
		m := namedMessage(name, delay)
		names[m.Envelope.UUID] = name
		return publishOne(t, h, topic, m)
	}

	// One message of trimmed in each state (each claim takes the only ready message).
	pending := publishNamed("pending", 0)
	holder := claimN(t, h, topic, trimmed, "holder", 1, holderLease)[0]
	dead := publishNamed("dead", 0)
	deadLetterOne(t, h, topic, trimmed, "test")
	delayed := publishNamed("delayed", time.Hour)
	ready := publishNamed("ready", 0)
	publishNamed("kept", 0)
	doomed := map[backend.MessageState]string{
		backend.StatePending: pending, backend.StateDead: dead, backend.StateDelayed: delayed, backend.StateReady: ready,
	}
	for st, id := range doomed {
		require.Equal(t, st, showMessage(t, a, topic, trimmed, id).State)
		require.NoError(t, a.DeleteMessage(ctx, &backend.MessageParams{Topic: topic, Group: trimmed, ID: id}), "DeleteMessage of the %s message", st)
	}
	for st, id := range doomed {
		p := &backend.MessageParams{Topic: topic, Group: trimmed, ID: id}
		_, err := a.Message(ctx, p)
		require.ErrorIs(t, err, backend.ErrMessageNotFound, "Message of the deleted %s message", st)
		require.ErrorIs(t, a.DeleteMessage(ctx, p), backend.ErrMessageNotFound, "DeleteMessage again of the %s message", st)
		require.ErrorIs(t, a.RunMessage(ctx, p), backend.ErrMessageNotFound, "RunMessage of the deleted %s message", st)
	}
	for _, st := range backend.States {
		ms, _ := listAll(t, a, backend.MessagesParams{Topic: topic, Group: trimmed, State: st})
		for _, id := range doomed {
			require.NotContains(t, messageIDs(ms), id, "a deleted message is listed as %s", st)
		}
	}

	// The holder's late calls change nothing.
	_, err := h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: trimmed, Consumer: "holder", Items: held(holder)})
	require.NoError(t, err, "the holder's ack of a deleted message")
	lost, err := h.Backend.Extend(ctx, &backend.ExtendParams{Topic: topic, Group: trimmed, Consumer: "holder", Items: held(holder), Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, []string{pending}, lost, "the holder still holds a deleted message")
	n, err := h.Backend.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: trimmed, IDs: []string{dead}})
	require.NoError(t, err)
	require.Zero(t, n, "a deleted dead letter was requeued")
	_, err = a.Message(ctx, &backend.MessageParams{Topic: topic, Group: trimmed, ID: pending})
	require.ErrorIs(t, err, backend.ErrMessageNotFound, "the holder's calls brought a deleted message back")

	// trimmed receives only "kept", also after the deleted lease would have run out.
	r := &recorder{}
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Group: trimmed, ReclaimInterval: 100 * time.Millisecond})
	consume(subscribe(t, sub, topic), r, 0, 1, nil)
	require.True(t, poll(waitTimeout, func() bool { return r.count() > 0 }), "the message left in the group was not delivered")
	never(t, holderLease+time.Second, func() bool { return r.count() > 1 }, "a deleted message was delivered")
	require.Equal(t, "kept", r.list()[0].Payload)
	requireSettled(t, h, topic, trimmed, 0)

	// whole receives every message, intact: a delete in one group frees no body another needs.
	require.NoError(t, a.RunMessage(ctx, &backend.MessageParams{Topic: topic, Group: whole, ID: delayed}))
	rw := &recorder{}
	consume(subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: whole}), topic), rw, 0, 1, nil)
	all := make([]string, 0, len(names))
	for id := range names {
		all = append(all, id)
	}
	rw.waitAll(t, all)
	for _, s := range rw.list() {
		require.Equal(t, names[s.UUID], s.Payload, "the other group's copy of a message")
	}
	requireSettled(t, h, topic, whole, 0)
}

// RunMessage makes a delayed message due now, published delayed or nacked with a delay: a
// subscriber gets it at once instead of in an hour. A message that is not delayed gives
// ErrNotDelayed and stays where it is.
func messageRun(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	uuids := map[string]string{} // ID -> UUID
	publishNamed := func(name string, delay time.Duration) string {
		m := namedMessage(name, delay)
		id := publishOne(t, h, topic, m)
		uuids[id] = m.Envelope.UUID
		return id
	}
	pending := publishNamed("pending", 0)
	claimN(t, h, topic, group, "holder", 1, time.Minute)
	dead := publishNamed("dead", 0)
	deadLetterOne(t, h, topic, group, "test")
	retry := publishNamed("retry", 0)
	d := claimN(t, h, topic, group, "c", 1, time.Minute)[0]
	_, err := h.Backend.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "c",
		Items: []backend.NackItem{{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour}}})
	require.NoError(t, err)
	delayed := publishNamed("delayed", time.Hour)
	ready := publishNamed("ready", 0)
	require.Equal(t, counts{Ready: 1, Delayed: 2, Pending: 1, Dead: 1}, countsOf(stats(t, h, topic, group)))

	for name, id := range map[string]string{"ready": ready, "pending": pending, "dead": dead} {
		require.ErrorIs(t, a.RunMessage(ctx, &backend.MessageParams{Topic: topic, Group: group, ID: id}), backend.ErrNotDelayed, "RunMessage of the %s message", name)
	}
	for _, id := range []string{delayed, retry} {
		p := &backend.MessageParams{Topic: topic, Group: group, ID: id}
		require.NoError(t, a.RunMessage(ctx, p))
		require.Equal(t, backend.StateReady, showMessage(t, a, topic, group, id).State, "a delayed message after RunMessage")
		require.ErrorIs(t, a.RunMessage(ctx, p), backend.ErrNotDelayed, "RunMessage again")
	}
	require.Equal(t, counts{Ready: 3, Pending: 1, Dead: 1}, countsOf(stats(t, h, topic, group)))

	r := &recorder{}
	consume(subscribe(t, newSubscriber(t, h, pubsub.SubscriberConfig{Group: group}), topic), r, 0, 1, nil)
	r.waitAll(t, []string{uuids[ready], uuids[delayed], uuids[retry]})
	require.Equal(t, 1, r.of(uuids[delayed])[0].Attempt)
	require.Equal(t, 2, r.of(uuids[retry])[0].Attempt, "the nacked message's next attempt")
	requireCounts(t, h, topic, group, counts{Pending: 1, Dead: 1})
}

// Dead letters are listed, requeued (attempts reset) and purged through the Admin as through
// the Backend, and Admin.Messages lists the same dead letters as Admin.DeadLetters.
func messageDeadLetters(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	publishDirectInOrder(t, h, topic, 4)
	ds := claimN(t, h, topic, group, "c", 4, time.Minute)
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
		deadLetter(t, h, topic, group, d, "test")
	}
	dls, err := a.DeadLetters(ctx, &backend.DeadLettersParams{Topic: topic, Group: group, Count: 10})
	require.NoError(t, err)
	listedDL := make([]string, len(dls))
	for i, dl := range dls {
		listedDL[i] = dl.ID
	}
	require.Equal(t, ids, listedDL, "Admin.DeadLetters")
	ms, _ := listAll(t, a, backend.MessagesParams{Topic: topic, Group: group, State: backend.StateDead})
	require.Equal(t, ids, messageIDs(ms), "Admin.Messages of the dead letters")

	n, err := a.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: group, IDs: []string{ids[1]}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	m := showMessage(t, a, topic, group, ids[1])
	require.Equal(t, backend.StateReady, m.State)
	require.Zero(t, m.Attempts, "requeue did not reset the attempts")

	n, err = a.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, All: true, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = a.Message(ctx, &backend.MessageParams{Topic: topic, Group: group, ID: ids[0]})
	require.ErrorIs(t, err, backend.ErrMessageNotFound, "the oldest dead letter after its purge")
	n, err = a.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, All: true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	ms, _ = listAll(t, a, backend.MessagesParams{Topic: topic, Group: group, State: backend.StateDead})
	require.Empty(t, ms)
	require.Equal(t, counts{Ready: 1}, countsOf(stats(t, h, topic, group)))

	d := claimN(t, h, topic, group, "c", 1, time.Minute)[0]
	require.Equal(t, ids[1], d.ID)
	require.Equal(t, 1, d.Attempt)
}
