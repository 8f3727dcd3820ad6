package list_test

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/relq/relq/internal/adaptertest"
)

// TestPubSub runs Watermill's own Pub/Sub suite (see adaptertest.Watermill) on a server of its
// own, which TestReconnect restarts (the data survives in the AOF).
//
// The features are the list backend's honest answers. Order: one subscriber handling one
// message at a time gets messages in publish order, but a Nack sends its message back
// through a backoff delay while later messages go ahead, and several subscribers interleave;
// so order is guaranteed only with a single subscriber. A new group starts with the next
// publish, so a new subscriber does not receive old messages.
func TestPubSub(t *testing.T) {
	adaptertest.Watermill(t, build, tests.Features{
		ConsumerGroups:                      true,
		ExactlyOnceDelivery:                 false,
		GuaranteedOrder:                     false,
		GuaranteedOrderWithSingleSubscriber: true,
		Persistent:                          true,
		NewSubscriberReceivesOldMessages:    false,
	}, adaptertest.WatermillOptions{})
}
