package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// BodyDeleter is implemented by Faults that can delete a message's stored body (or entry)
// while the group still owes the message, as a hand edit or a lost write leaves it. The
// missing-body case is skipped for Faults without it.
type BodyDeleter interface {
	DeleteBody(ctx context.Context, topic, id string) error
}

// A message whose stored body is gone when it is claimed again is dead-lettered with the
// reason "body missing": it never vanishes without a trace, and the subscription goes on.
func deadLetterBodyMissing(t *testing.T, h Harness) {
	del, ok := h.Faults.(BodyDeleter)
	if !ok {
		t.Skip("the Harness's Faults cannot delete a body")
	}
	ctx := context.Background()
	topic, group := topicName(), backend.DefaultGroup
	ensureGroup(t, h, topic, group)
	publishDirect(t, h, topic, 1)
	d := claimN(t, h, topic, group, "a", 1, 30*time.Second)[0]
	require.NoError(t, del.DeleteBody(ctx, topic, d.ID))
	_, err := h.Backend.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "a",
		Items: []backend.NackItem{{ID: d.ID, Attempt: d.Attempt}}})
	require.NoError(t, err)

	sub := newSubscriber(t, h, pubsub.SubscriberConfig{})
	r := &recorder{}
	consume(subscribe(t, sub, topic), r, 0, 1, nil)
	pub := newPublisher(t, h, pubsub.PublisherConfig{})
	after := newMessage("after")
	publish(t, pub, topic, after)
	r.waitAll(t, []string{after.UUID})
	requireSettled(t, h, topic, group, 1)

	dls := deadLetters(t, h, topic, group, 0, 10)
	require.Len(t, dls, 1)
	require.Equal(t, d.ID, dls[0].ID)
	require.Contains(t, dls[0].Reason, "body missing")
	require.Equal(t, 1, r.count(), "the handler saw the message without a body: %+v", r.list())
}
