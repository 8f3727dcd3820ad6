package pubsub

import "github.com/google/uuid"

// A delivery is fenced by its holder's consumer name and attempt: nack, extend and release
// count only where both still match. A release gives the attempt back (the message was never
// handled), so the next claim of that message has the same attempt again. Were two
// subscriptions to share a name, a release whose reply was lost and that is retried could
// then match the other subscription's new claim and take the message from it. So each
// Subscribe call holds its deliveries under the configured name plus a suffix of its own;
// one subscription releases only once its claiming has stopped, so a token never names two
// live claims.

// consumerSuffixLen is the length of that suffix: "." and 6 random hex digits.
const consumerSuffixLen = 7

// subscriptionConsumer is the name one Subscribe call holds its deliveries under.
func subscriptionConsumer(base string) string {
	return base + "." + uuid.NewString()[:consumerSuffixLen-1]
}
