// Package middleware holds Watermill router middleware built on relq's delivery contract.
//
//   - Backoff turns a handler error into a nack with an exponential, jittered delay computed
//     from the delivery attempt, so retries wait in Redis: they survive restarts, do not hold
//     a handler, and end in the group's dead-letter store after the subscriber's
//     MaxDeliveries.
//   - Idempotent skips messages that a handler already handled, with markers in Redis, so
//     that at-least-once delivery gives effectively-once handling within the limits listed
//     in docs/idempotency.md.
//   - Metrics exports handler duration, outcomes and delivery attempts to Prometheus.
//
// Every middleware has one constructor shape, X(XConfig) (message.HandlerMiddleware, error):
// zero config fields take the documented defaults (exported as ...Default constants), and an
// invalid value fails with a *pubsub.ConfigError naming the field (errors.Is
// pubsub.ErrInvalidConfig).
//
// # Order
//
// Watermill runs the middleware added first outermost. With Watermill's Retry and
// Recoverer (imported as wm "github.com/ThreeDotsLabs/watermill/message/router/middleware"),
// add them in this order:
//
//	router.AddMiddleware(
//		metrics,          // outermost: counts and times each delivery, whatever happens inside
//		backoff,          // sees a delivery's final error and sets its Redis-side delay
//		idempotent,       // one marker per delivery, held across the in-process retries
//		retry.Middleware, // wm.Retry: in-process retries first, for blips worth milliseconds
//		wm.Recoverer,     // a panic becomes an error, so it is retried and backed off like one
//	)
//
// Backoff goes outside Retry, so that it sees only the error that outlasted the in-process
// retries and nacks once per delivery. Idempotent outside Retry takes its marker once per
// delivery rather than once per try (so InProgressTTL must cover all the tries).
//
// Watermill's PoisonQueue acks every failed message after publishing it to a poison topic:
// anywhere around Backoff it would end relq's retries at the first error. To use a poison
// topic, put PoisonQueueWithFilter with IsFinalAttempt outside Backoff. IsFinalAttempt
// knows the last delivery from the subscriber's own MaxDeliveries, which every message it
// delivers carries (pubsub.MaxDeliveriesOf): earlier deliveries are retried through Redis, and
// the last one goes to the poison topic instead of relq's dead-letter store:
//
//	poison, err := wm.PoisonQueueWithFilter(pub, "poison", middleware.IsFinalAttempt)
//	router.AddMiddleware(metrics, poison, backoff, idempotent, retry.Middleware, wm.Recoverer)
//
// Without PoisonQueue, failed messages end in the dead-letter store, where the relq CLI and
// Backend.RequeueDeadLetters can list and requeue them; that is usually what you want.
package middleware
