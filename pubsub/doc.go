// Package pubsub is relq for Watermill: a Publisher and a Subscriber (message.Publisher and
// message.Subscriber) over any relq backend, their configs, the metadata helpers a handler
// uses (Attempt, DeliveryID, SetDelay, SetNackDelay, SetNackReason, SetPriority), Backoff,
// and the errors to match.
//
// Pick a backend (adapters/list, adapters/zset or adapters/streams), then build both on it:
//
//	b, _ := list.New(redisClient, list.Options{})
//	pub, _ := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, logger)
//	sub, _ := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Group: "billing"}, logger)
//
// Every backend gets the same batching, leases and heartbeats, retries with backoff, dead
// letters and close semantics from this package; package backend holds the contract they
// implement and the Admin API for stats and dead letters.
//
// Delivery is at-least-once: a message is redelivered after a nack, after its lease
// expires (a crashed or stuck consumer), or when an ack was lost. Make handlers
// idempotent; middleware.Idempotent does it with markers in Redis (docs/idempotency.md).
package pubsub
