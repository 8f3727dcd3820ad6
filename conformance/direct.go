package conformance

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// Helpers that drive a Backend directly, as a consumer that crashes or misbehaves would:
// the Subscriber never lets a test hold a delivery past its lease on purpose.

// publishDirect publishes n messages with Backend.Publish and returns their delivery IDs.
func publishDirect(t *testing.T, h Harness, topic string, n int) []string {
	t.Helper()
	return publishOut(t, h, topic, outMessages(n))
}

// publishDirectInOrder is publishDirect for a test that relies on the order of the n
// messages: on a Partitioned backend they share one key, among whose messages orders hold.
func publishDirectInOrder(t *testing.T, h Harness, topic string, n int) []string {
	t.Helper()
	return publishOut(t, h, topic, inOrderOut(h, outMessages(n)))
}

// inOrderOut is inOrder for messages published with Backend.Publish.
func inOrderOut(h Harness, out []backend.OutMessage) []backend.OutMessage {
	if h.Backend.Capabilities().Partitioned {
		for i := range out {
			if out[i].Envelope.Metadata == nil {
				out[i].Envelope.Metadata = map[string]string{}
			}
			out[i].Envelope.Metadata[backend.MetadataKey] = orderKey
		}
	}
	return out
}

func publishOut(t *testing.T, h Harness, topic string, out []backend.OutMessage) []string {
	t.Helper()
	res, err := h.Backend.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: out})
	ids := res.IDs
	require.NoError(t, err)
	require.Len(t, ids, len(out))
	return ids
}

// claimN claims until it holds n deliveries of the group (a claim may return fewer than
// asked), failing the test if they do not come.
func claimN(t *testing.T, h Harness, topic, group, consumer string, n int, lease time.Duration) []backend.Delivery {
	t.Helper()
	var got []backend.Delivery
	deadline := time.Now().Add(waitTimeout)
	for len(got) < n {
		ds, err := h.Backend.Claim(context.Background(), &backend.ClaimParams{
			Topic: topic, Group: group, Consumer: consumer,
			Count: n - len(got), Lease: lease, Block: shortBlock,
		})
		require.NoError(t, err)
		got = append(got, ds...)
		require.True(t, time.Now().Before(deadline), "claimed %d of %d deliveries in %v", len(got), n, waitTimeout)
	}
	require.Len(t, got, n, "Claim returned more deliveries than asked for")
	return got
}

// reclaimUntil calls Reclaim until done accepts the accumulated results.
func reclaimUntil(t *testing.T, h Harness, p backend.ReclaimParams, done func(backend.ReclaimResult) bool) backend.ReclaimResult {
	t.Helper()
	var total backend.ReclaimResult
	ok := poll(waitTimeout, func() bool {
		r, err := h.Backend.Reclaim(context.Background(), &p)
		require.NoError(t, err)
		total.Reclaimed += r.Reclaimed
		total.DeadLettered += r.DeadLettered
		total.Orphans += r.Orphans
		total.Promoted += r.Promoted
		return done(total)
	})
	require.True(t, ok, "Reclaim never did what was expected; totals %+v", total)
	return total
}

func held(ds ...backend.Delivery) []backend.Held {
	out := make([]backend.Held, len(ds))
	for i, d := range ds {
		out[i] = backend.Held{ID: d.ID, Attempt: d.Attempt}
	}
	return out
}

func deadLetters(t *testing.T, h Harness, topic, group string, offset, count int) []backend.DeadLetter {
	t.Helper()
	dls, err := h.Backend.DeadLetters(context.Background(), &backend.DeadLettersParams{
		Topic: topic, Group: group, Offset: offset, Count: count,
	})
	require.NoError(t, err)
	return dls
}

// deadLetter dead-letters d, held by consumer "c", with reason. One Nack call each: the
// dead-lettered-at order of several is the order of the calls.
func deadLetter(t *testing.T, h Harness, topic, group string, d backend.Delivery, reason string) {
	t.Helper()
	_, err := h.Backend.Nack(context.Background(), &backend.NackParams{Topic: topic, Group: group, Consumer: "c",
		Items: []backend.NackItem{{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: reason}}})
	require.NoError(t, err)
}

// ensureGroup registers group on topic, as a Subscriber does before it claims. A test that
// drives a group directly registers it before publishing: a message published to a topic
// with no group waits in the topic's backlog for the first group registered.
func ensureGroup(t *testing.T, h Harness, topic, group string) {
	t.Helper()
	require.NoError(t, h.Backend.EnsureGroup(context.Background(), &backend.EnsureGroupParams{Topic: topic, Group: group}))
}

// publishOne publishes one message with Backend.Publish and returns its delivery ID.
func publishOne(t *testing.T, h Harness, topic string, m backend.OutMessage) string {
	t.Helper()
	if m.Envelope.UUID == "" {
		m.Envelope.UUID = watermill.NewUUID()
	}
	res, err := h.Backend.Publish(context.Background(), &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{m}})
	ids := res.IDs
	require.NoError(t, err)
	require.Len(t, ids, 1)
	return ids[0]
}

// outMessages returns n messages with fresh UUIDs, their index as payload.
func outMessages(n int) []backend.OutMessage {
	out := make([]backend.OutMessage, n)
	for i := range out {
		out[i].Envelope = backend.Envelope{UUID: watermill.NewUUID(), Payload: []byte(strconv.Itoa(i))}
	}
	return out
}
