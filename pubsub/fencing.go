package pubsub

import (
	"encoding/hex"

	"github.com/google/uuid"
)

// A delivery is fenced by its holder's consumer name and attempt: nack, extend and release
// count only where both still match. A release gives the attempt back (the message was never
// handled), so the next claim of that message has the same attempt again. Were two
// subscriptions to share a name, a release whose reply was lost and that is retried could
// then match the other subscription's new claim and take the message from it. So each
// Subscribe call holds its deliveries under the configured name plus a random suffix of its
// own (48 bits, so that pods sharing a configured name and restarting often do not meet).
// One subscription releases what it claimed only as it stops, and what its last claim
// brings in meanwhile is released too: a retried release can only meet a claim that is
// being released anyway.

// consumerSuffixLen is the length of that suffix: "." and 12 random hex digits.
const consumerSuffixLen = 13

// subscriptionConsumer is the name one Subscribe call holds its deliveries under.
func subscriptionConsumer(base string) string {
	id := uuid.New()
	return base + "." + hex.EncodeToString(id[:(consumerSuffixLen-1)/2])
}
