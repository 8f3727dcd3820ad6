// Package pubsub holds relq's delivery contract and the Watermill layer built on it.
//
// A Backend (adapters/list, adapters/zset, adapters/streams) implements the contract of
// Redis Streams consumer groups on one Redis data structure: publish, claim with a lease,
// ack, fenced nack, fenced extend, reclaim of expired leases, dead letters and stats.
// Publisher and Subscriber implement Watermill's message.Publisher and message.Subscriber
// once, on top of any Backend, so every backend gets the same batching, heartbeats,
// retries and close semantics.
//
// Delivery is at-least-once: a message is redelivered after a nack, after its lease
// expires (a crashed or stuck consumer), or when an ack was lost. Make handlers
// idempotent; middleware.Idempotent does it with markers in Redis (docs/idempotency.md).
package pubsub
