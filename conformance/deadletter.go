package conformance

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func testDeadLetter(t *testing.T, f Factory) {
	run(t, f, "AfterMaxDeliveries", Options{}, deadLetterMaxDeliveries)
	run(t, f, "LeaseExpiredAtMaxDeliveries", Options{}, deadLetterLeaseExpired)
	run(t, f, "ListedInPagesAndRequeuedAll", Options{}, deadLetterPaged)
	run(t, f, "CorruptEntry", Options{}, deadLetterCorrupt)
	run(t, f, "BodyMissing", Options{}, deadLetterBodyMissing)
	run(t, f, "PurgeLimit", Options{}, deadLetterPurgeLimit)
	run(t, f, "PurgeByIDs", Options{}, deadLetterPurgeIDs)
	run(t, f, "NothingSelected", Options{}, deadLetterNothingSelected)
}

// With All, PurgeParams.Limit purges at most that many dead letters, the oldest first: a
// tool that asked "delete these N?" deletes no letter that arrived after it counted.
func deadLetterPurgeLimit(t *testing.T, h Harness) {
	ctx := context.Background()
	topic, group := topicName(), "billing"
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 3)
	for _, d := range claimN(t, h, topic, group, "c", 3, time.Minute) {
		deadLetter(t, h, topic, group, d, "test") // in claim order: the dead-lettered-at order
	}
	before := deadLetters(t, h, topic, group, 0, 10)
	require.Len(t, before, 3)

	_, err := h.Backend.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, All: true, Limit: -1})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
	n, err := h.Backend.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, All: true, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	after := deadLetters(t, h, topic, group, 0, 10)
	require.Len(t, after, 1)
	require.Equal(t, before[2].ID, after[0].ID, "the newest dead letter is left")
	n, err = h.Backend.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, All: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// PurgeParams.IDs purges exactly the dead letters given: an ID that is no dead letter of the
// group (requeued since, and ready, pending or delayed now; acked; unknown; or given twice)
// is skipped and keeps its state, another group's copy of a purged letter is kept, and
// Limit with IDs is an error.
func deadLetterPurgeIDs(t *testing.T, h Harness) {
	ctx := context.Background()
	topic, group, other := topicName(), "billing", "audit"
	ensureGroup(t, h, topic, group)
	ensureGroup(t, h, topic, other)
	ids := publishDirect(t, h, topic, 6)
	payloads := map[string]string{}
	for i, id := range ids {
		payloads[id] = strconv.Itoa(i)
	}
	for _, d := range claimN(t, h, topic, group, "c", len(ids), time.Minute) {
		deadLetter(t, h, topic, group, d, "test")
	}
	shared := claimN(t, h, topic, other, "c", 1, time.Minute)[0] // dead in both groups
	deadLetter(t, h, topic, other, shared, "other's")
	var rest []string
	for _, id := range ids {
		if id != shared.ID {
			rest = append(rest, id)
		}
	}
	doomed, ready, pending, delayed, kept := rest[0], rest[1], rest[2], rest[3], rest[4]

	// Requeued one at a time, so that each claim takes the one asked for.
	requeue := func(id string) {
		t.Helper()
		n, err := h.Backend.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: group, IDs: []string{id}})
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	requeue(pending)
	holder := claimN(t, h, topic, group, "holder", 1, time.Minute)[0]
	require.Equal(t, pending, holder.ID)
	requeue(delayed)
	d := claimN(t, h, topic, group, "c", 1, time.Minute)[0]
	require.Equal(t, delayed, d.ID)
	_, err := h.Backend.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "c",
		Items: []backend.NackItem{{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour}}})
	require.NoError(t, err)
	requeue(ready)
	before := counts{Ready: 1, Delayed: 1, Pending: 1, Dead: 3}
	require.Equal(t, before, countsOf(stats(t, h, topic, group)))

	given := []string{shared.ID, doomed, ready, pending, delayed, doomed, "no-such-id"}
	_, err = h.Backend.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, IDs: given, Limit: 1})
	require.ErrorIs(t, err, backend.ErrInvalidConfig, "IDs with a Limit")
	require.Equal(t, before, countsOf(stats(t, h, topic, group)), "a purge that failed deleted something")

	n, err := h.Backend.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, IDs: given})
	require.NoError(t, err)
	require.Equal(t, 2, n, "the dead letters among %q", given)
	require.Equal(t, counts{Ready: 1, Delayed: 1, Pending: 1, Dead: 1}, countsOf(stats(t, h, topic, group)))
	dls := deadLetters(t, h, topic, group, 0, 10)
	require.Len(t, dls, 1)
	require.Equal(t, kept, dls[0].ID)
	require.Equal(t, payloads[kept], string(dls[0].Envelope.Payload))
	n, err = h.Backend.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, IDs: given})
	require.NoError(t, err)
	require.Zero(t, n, "a second purge of the same IDs")

	// The skipped messages are where they were, whole.
	ack, err := h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "holder", Items: held(holder)})
	require.NoError(t, err)
	require.Equal(t, backend.AckResult{Acked: 1}, ack, "the pending message's holder still holds it")
	got := claimN(t, h, topic, group, "c", 1, time.Minute)[0]
	require.Equal(t, ready, got.ID)
	require.NoError(t, got.Err)
	require.Equal(t, payloads[ready], string(got.Envelope.Payload))
	a := h.Admin
	if a == nil {
		a, _ = h.Backend.(backend.Admin)
	}
	if a != nil {
		require.NoError(t, a.RunMessage(ctx, &backend.MessageParams{Topic: topic, Group: group, ID: delayed}), "the delayed message")
		got = claimN(t, h, topic, group, "c", 1, time.Minute)[0]
		require.Equal(t, delayed, got.ID)
		require.NoError(t, got.Err)
		require.Equal(t, payloads[delayed], string(got.Envelope.Payload))
	}

	// The other group keeps its copy of every message, its dead letter included.
	dls = deadLetters(t, h, topic, other, 0, 10)
	require.Len(t, dls, 1)
	require.Equal(t, shared.ID, dls[0].ID)
	require.Equal(t, payloads[shared.ID], string(dls[0].Envelope.Payload))
	for _, d := range claimN(t, h, topic, other, "c", len(rest), time.Minute) {
		require.NoError(t, d.Err)
		require.Equal(t, payloads[d.ID], string(d.Envelope.Payload), "the other group's copy of %s", d.ID)
	}
}

// A message that always fails is delivered MaxDeliveries times, then waits in the dead-letter
// store and is never delivered again, until requeued (with its attempts reset) or purged.
func deadLetterMaxDeliveries(t *testing.T, h Harness) {
	const maxDeliveries = 3
	topic, group := topicName(), "billing"
	var ackUUIDs sync.Map // messages the handler accepts; everything else fails
	r := &recorder{}
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{Group: group, MaxDeliveries: maxDeliveries})
	consume(subscribe(t, sub, topic), r, 0, 1, func(msg *message.Message) bool {
		_, ok := ackUUIDs.Load(msg.UUID)
		return ok
	})

	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	requeued, purged := newMessage("requeued"), newMessage("purged")
	requeued.Metadata.Set("k", "v")
	start := time.Now()
	publish(t, pub, topic, requeued, purged)

	requireCounts(t, h, topic, group, counts{Dead: 2})
	for _, m := range []*message.Message{requeued, purged} {
		got := r.of(m.UUID)
		require.Len(t, got, maxDeliveries, "deliveries of %s", m.Payload)
		for i, s := range got {
			require.Equal(t, i+1, s.Attempt)
			require.Equal(t, got[0].DeliveryID, s.DeliveryID)
		}
	}
	never(t, 500*time.Millisecond, func() bool { return r.count() > 2*maxDeliveries }, "a dead letter was delivered again")

	dls := deadLetters(t, h, topic, group, 0, 10)
	require.Len(t, dls, 2)
	byUUID := map[string]backend.DeadLetter{}
	for _, dl := range dls {
		byUUID[dl.Envelope.UUID] = dl
	}
	dl, ok := byUUID[requeued.UUID]
	require.True(t, ok, "dead letters %+v", dls)
	require.Equal(t, r.of(requeued.UUID)[0].DeliveryID, dl.ID)
	require.Equal(t, topic, dl.Topic)
	require.Equal(t, group, dl.Group)
	require.Equal(t, "requeued", string(dl.Envelope.Payload))
	require.Equal(t, "v", dl.Envelope.Metadata["k"])
	require.NotEmpty(t, dl.Reason)
	require.Equal(t, maxDeliveries, dl.Attempts)
	require.Empty(t, dl.Raw)
	require.WithinRange(t, dl.DeadAt, start.Add(-time.Minute), time.Now().Add(time.Minute))

	ackUUIDs.Store(requeued.UUID, true)
	n, err := h.Backend.RequeueDeadLetters(context.Background(), &backend.RequeueParams{
		Topic: topic, Group: group, IDs: []string{dl.ID},
	})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, poll(waitTimeout, func() bool { return len(r.of(requeued.UUID)) > maxDeliveries }), "requeued message not delivered")
	require.Equal(t, 1, r.of(requeued.UUID)[maxDeliveries].Attempt, "requeue did not reset the attempts")
	requireCounts(t, h, topic, group, counts{Dead: 1})

	n, err = h.Backend.PurgeDeadLetters(context.Background(), &backend.PurgeParams{Topic: topic, Group: group, All: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	s := requireSettled(t, h, topic, group, 0)
	require.Empty(t, deadLetters(t, h, topic, group, 0, 10))
	require.Len(t, r.of(purged.UUID), maxDeliveries, "the purged message was delivered again")
	require.Len(t, r.of(requeued.UUID), maxDeliveries+1)
	require.Equal(t, int64(2*maxDeliveries+1), s.Counters.Claimed)
	require.Equal(t, int64(1), s.Counters.Acked)
	require.Equal(t, int64(2), s.Counters.DeadLettered)
}

// A delivery whose lease expires on its last allowed attempt goes to the dead letters, not
// back to ready: a consumer that crashes on a poison message cannot loop forever.
func deadLetterLeaseExpired(t *testing.T, h Harness) {
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 1)
	d := claimN(t, h, topic, group, "crashes", 1, 200*time.Millisecond)[0]
	res := reclaimUntil(t, h, backend.ReclaimParams{Topic: topic, Group: group, MaxDeliveries: 1},
		func(r backend.ReclaimResult) bool { return r.DeadLettered+r.Reclaimed > 0 })
	require.Equal(t, backend.ReclaimResult{DeadLettered: 1}, res, "the expired delivery went back to ready")

	s := requireSettled(t, h, topic, group, 1)
	require.Equal(t, int64(1), s.Counters.DeadLettered)
	dls := deadLetters(t, h, topic, group, 0, 10)
	require.Len(t, dls, 1)
	require.Equal(t, d.ID, dls[0].ID)
	require.Equal(t, 1, dls[0].Attempts)
	require.Contains(t, dls[0].Reason, "lease expired")
}

// Dead letters are listed oldest first, page by page, keep their reasons, and come back all
// at once with attempts reset.
func deadLetterPaged(t *testing.T, h Harness) {
	const total = 5
	ctx := context.Background()
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	publishDirectInOrder(t, h, topic, total)
	ds := claimN(t, h, topic, group, "c", total, 30*time.Second)
	for i, d := range ds {
		nr, err := h.Backend.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "c",
			Items: []backend.NackItem{{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: "bad-" + strconv.Itoa(i)}}})
		require.NoError(t, err)
		require.Equal(t, backend.NackResult{DeadLettered: 1}, nr)
	}
	requireSettled(t, h, topic, group, total)

	var listed []backend.DeadLetter
	for offset := 0; offset <= total; offset += 2 {
		page := deadLetters(t, h, topic, group, offset, 2)
		require.Len(t, page, min(2, total-offset), "page at offset %d", offset)
		listed = append(listed, page...)
	}
	for i, dl := range listed {
		require.Equal(t, ds[i].ID, dl.ID, "dead letters not listed oldest first")
		require.Equal(t, "bad-"+strconv.Itoa(i), dl.Reason)
		require.Equal(t, 1, dl.Attempts)
	}

	n, err := h.Backend.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: group, All: true})
	require.NoError(t, err)
	require.Equal(t, total, n)
	require.Equal(t, counts{Ready: total}, countsOf(stats(t, h, topic, group)))
	again := claimN(t, h, topic, group, "c", total, 30*time.Second)
	for _, d := range again {
		require.Equal(t, 1, d.Attempt, "requeue did not reset the attempts")
	}
	_, err = h.Backend.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "c", Items: held(again...)})
	require.NoError(t, err)
	requireSettled(t, h, topic, group, 0)
}

// Bytes that are not a relq envelope go to the dead letters with the decode error, the good
// messages around them are delivered, and the subscription keeps running.
func deadLetterCorrupt(t *testing.T, h Harness) {
	if h.Faults == nil {
		t.Skip("the Harness has no Faults to write a corrupt entry with")
	}
	topic, group := topicName(), backend.DefaultGroup
	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	require.NoError(t, sub.SubscribeInitialize(topic))
	r := &recorder{}
	consume(subscribe(t, sub, topic), r, 0, 1, nil)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})

	before, after := newMessage("before"), newMessage("after")
	raw := []byte("\x07this is not an envelope\x00\xff")
	publish(t, pub, topic, before)
	require.NoError(t, h.Faults.InjectCorrupt(context.Background(), topic, group, raw))
	publish(t, pub, topic, after)
	r.waitAll(t, []string{before.UUID, after.UUID})
	requireSettled(t, h, topic, group, 1)

	dls := deadLetters(t, h, topic, group, 0, 10)
	require.Len(t, dls, 1)
	require.Equal(t, raw, dls[0].Raw)
	require.Contains(t, strings.ToLower(dls[0].Reason), "corrupt", "reason %q", dls[0].Reason)
	require.Equal(t, topic, dls[0].Topic)
	require.Equal(t, group, dls[0].Group)

	later := newMessage("later")
	publish(t, pub, topic, later)
	r.waitAll(t, []string{later.UUID})
	requireSettled(t, h, topic, group, 1)
	require.Equal(t, 3, r.count(), "the handler saw the corrupt entry or a duplicate: %+v", r.list())
}
