// Package backend is relq's delivery contract: what a Redis data structure must do for the
// Publisher and Subscriber of package pubsub to give at-least-once delivery on it.
//
// A Backend (adapters/list, adapters/zset, adapters/streams) implements the contract of Redis
// Streams consumer groups: publish, claim with a lease, ack, fenced nack, fenced extend,
// reclaim of expired leases, dead letters and stats. The optional interfaces add what not
// every backend can do: Admin (inspect and edit messages and groups, for the CLI, the web
// dashboard and the metrics collector), Ephemeral (groups that live only while a subscriber
// does), TopicLister, ReplicaWaiter and EvictionReader.
//
// Watermill users need only package pubsub and an adapter's New. This package is for those
// who build tools on the Admin API and for authors of a new backend, who prove theirs with
// package conformance. Params and results are plain structs; each params type says what its
// zero value means.
package backend
