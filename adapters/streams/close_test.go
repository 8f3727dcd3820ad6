package streams

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// A claim waiting for a retry's due time ends on that time or on its context, not on its
// XREAD's block: when Close cancels it (CloseTimeout passed), its XREAD ends in Redis too,
// and no blocked connection of the subscriber remains after Close.
func TestCloseLeavesNoXREADBlocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := adaptertest.NamedClient(t, e.Prefix, nil)
	b, err := New(c, Options{Prefix: e.Prefix})
	require.NoError(t, err)
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, nil)
	require.NoError(t, err)
	// The retry is due in a minute, within Block: the claim waits for it with a timer, in an
	// XREAD that blocks for that minute. CloseTimeout cancels the claim long before.
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{
		Group: "g", Prefetch: -1, Block: 2 * time.Minute, CloseTimeout: 100 * time.Millisecond,
		NackBackoff: func(int) time.Duration { return time.Minute },
	}, nil)
	require.NoError(t, err)
	msgs, err := sub.Subscribe(e.Ctx, "t")
	require.NoError(t, err)

	require.NoError(t, pub.Publish("t", message.NewMessage(watermill.NewUUID(), []byte("later"))))
	(<-msgs).Nack()
	// The nack parked the message and woke the claim, whose XREAD ended then; the one blocked
	// now is the claim's next, which knows of the retry.
	require.Eventually(t, func() bool {
		return len(e.retry("t", "g")) == 1 && adaptertest.Blocked(e.Ctx, e.C, e.Prefix, "xread") == 1
	}, 10*time.Second, time.Millisecond, "the claim should wait for the retry")

	require.NoError(t, sub.Close())
	require.Eventually(t, func() bool {
		return adaptertest.Blocked(e.Ctx, e.C, e.Prefix, "") == 0
	}, 10*time.Second, time.Millisecond, "no connection of the closed subscriber should stay blocked")
}
