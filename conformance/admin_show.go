package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// timeSlack absorbs the rounding of times the Redis clock set (whole ms) and read back, when
// compared with the Go clock around the call that set them.
const timeSlack = time.Second

// Admin.Message shows a message wherever it is: its state and attempts, the holder and the
// lease left of a pending one (negative once expired), the due time of a delayed one
// (published delayed, or nacked with a delay), the reason of a dead one, and the envelope.
func messageShows(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	envelope := func(name string) backend.Envelope {
		return backend.Envelope{UUID: watermill.NewUUID(), Metadata: map[string]string{"name": name}, Payload: []byte(name)}
	}
	// Each message is published alone and, where it must leave ready, claimed at once: the
	// claim takes the only ready message.
	pendingEnv := envelope("pending")
	pending := publishOne(t, h, topic, backend.OutMessage{Envelope: pendingEnv})
	claimStart := time.Now()
	claimN(t, h, topic, group, "holder", 1, time.Minute)
	claimEnd := time.Now()

	retryEnv := envelope("retry")
	retry := publishOne(t, h, topic, backend.OutMessage{Envelope: retryEnv})
	d := claimN(t, h, topic, group, "c", 1, time.Minute)[0]
	nackStart := time.Now()
	_, err := h.Backend.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "c",
		Items: []backend.NackItem{{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour}}})
	require.NoError(t, err)
	nackEnd := time.Now()

	deadEnv := envelope("dead")
	dead := publishOne(t, h, topic, backend.OutMessage{Envelope: deadEnv})
	d = claimN(t, h, topic, group, "c", 1, time.Minute)[0]
	deadStart := time.Now()
	deadLetter(t, h, topic, group, d, "cannot parse: line 3")
	deadEnd := time.Now()

	// Claimed last, so that no claim above could take it back once its lease ran out.
	const expiringLease = 100 * time.Millisecond
	expiredEnv := envelope("expired")
	expired := publishOne(t, h, topic, backend.OutMessage{Envelope: expiredEnv})
	claimN(t, h, topic, group, "gone", 1, expiringLease)
	expiredEnd := time.Now()

	delayedEnv := envelope("delayed")
	delayStart := time.Now()
	delayed := publishOne(t, h, topic, backend.OutMessage{Envelope: delayedEnv, Delay: time.Hour})
	delayEnd := time.Now()

	readyEnv := envelope("ready")
	ready := publishOne(t, h, topic, backend.OutMessage{Envelope: readyEnv, Priority: 3})

	check := func(id string, e backend.Envelope, state backend.MessageState, attempts int) backend.MessageInfo {
		t.Helper()
		m := showMessage(t, a, topic, group, id)
		require.Equal(t, state, m.State, "state of the %s message", e.Payload)
		require.Equal(t, attempts, m.Attempts, "attempts of the %s message", e.Payload)
		require.NoError(t, m.Err)
		require.False(t, m.BodyMissing)
		require.Equal(t, e.UUID, m.Envelope.UUID)
		require.Equal(t, e.Payload, m.Envelope.Payload)
		require.Equal(t, e.Metadata["name"], m.Envelope.Metadata["name"])
		return m
	}

	m := check(ready, readyEnv, backend.StateReady, 0)
	require.True(t, m.Due.IsZero(), "a ready message has no due time: %v", m.Due)
	require.Empty(t, m.Consumer)
	if h.Backend.Capabilities().Priorities {
		require.Equal(t, 3, m.Priority)
	}

	m = check(delayed, delayedEnv, backend.StateDelayed, 0)
	require.WithinRange(t, m.Due, delayStart.Add(time.Hour-timeSlack), delayEnd.Add(time.Hour+timeSlack))
	m = check(retry, retryEnv, backend.StateDelayed, 1)
	require.WithinRange(t, m.Due, nackStart.Add(time.Hour-timeSlack), nackEnd.Add(time.Hour+timeSlack))

	m = check(pending, pendingEnv, backend.StatePending, 1)
	require.Equal(t, "holder", m.Consumer)
	require.LessOrEqual(t, m.LeaseLeft, time.Minute+clockSlack)
	require.Greater(t, m.LeaseLeft, time.Minute-time.Since(claimStart)-timeSlack)
	require.WithinRange(t, m.Since, claimStart.Add(-timeSlack), claimEnd.Add(timeSlack))

	sleepUntil(expiredEnd.Add(expiringLease + 50*time.Millisecond))
	m = check(expired, expiredEnv, backend.StatePending, 1)
	require.Equal(t, "gone", m.Consumer)
	require.Negative(t, m.LeaseLeft, "the lease of %q ran out %v ago", m.Consumer, time.Since(expiredEnd)-expiringLease)

	m = check(dead, deadEnv, backend.StateDead, 1)
	require.Equal(t, "cannot parse: line 3", m.Reason)
	require.WithinRange(t, m.DeadAt, deadStart.Add(-timeSlack), deadEnd.Add(timeSlack))
}

// An ID the group does not hold (acked, or never published) gives ErrMessageNotFound from
// Message, DeleteMessage and RunMessage, whatever its form.
func messageNotFound(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic, group := topicName(), "g"
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 2)
	d := claimN(t, h, topic, group, "c", 1, time.Minute)[0]
	_, err := h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "c", Items: held(d)})
	require.NoError(t, err)

	for _, id := range []string{d.ID, "999999999", "no-such-id"} {
		p := &backend.MessageParams{Topic: topic, Group: group, ID: id}
		_, err := a.Message(ctx, p)
		require.ErrorIs(t, err, backend.ErrMessageNotFound, "Message %q", id)
		require.ErrorIs(t, a.DeleteMessage(ctx, p), backend.ErrMessageNotFound, "DeleteMessage %q", id)
		require.ErrorIs(t, a.RunMessage(ctx, p), backend.ErrMessageNotFound, "RunMessage %q", id)
	}
	require.Equal(t, counts{Ready: 1}, countsOf(stats(t, h, topic, group)), "a call on a message not held changed the group")
}

// A group registered after a message was published does not hold it, although its topic
// still does: ErrMessageNotFound, and the group that holds it is untouched.
func messageOfLaterGroup(t *testing.T, h Harness) {
	a := adminOf(t, h)
	ctx := context.Background()
	topic := topicName()
	ensureGroup(t, h, topic, "first")
	id := publishDirect(t, h, topic, 1)[0]
	ensureGroup(t, h, topic, "later")

	p := &backend.MessageParams{Topic: topic, Group: "later", ID: id}
	_, err := a.Message(ctx, p)
	require.ErrorIs(t, err, backend.ErrMessageNotFound)
	require.ErrorIs(t, a.DeleteMessage(ctx, p), backend.ErrMessageNotFound)
	require.Equal(t, backend.StateReady, showMessage(t, a, topic, "first", id).State)
}
