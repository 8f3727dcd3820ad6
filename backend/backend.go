package backend

import (
	"context"
	"time"
)

// DefaultGroup is the group of a subscriber that configures none.
const DefaultGroup = "default"

// Backend is one Redis data structure keeping relq's delivery contract. All methods are safe
// for concurrent use. Every state change a method makes is one Lua script or one atomic Redis
// command. Methods return the sentinel errors of this package (ErrInvalidName, ...) or the
// Redis client's error for connectivity failures, which callers retry.
//
// Topic, group and consumer names are validated by the caller (Publisher/Subscriber) with
// ValidateName; backends may validate again.
type Backend interface {
	// Name is a short identifier of the backend: "list", "zset" or "streams".
	Name() string

	// Capabilities declares where this backend's semantics differ from the others.
	Capabilities() Capabilities

	// Publish stores a batch of messages of one topic in one round trip and returns their
	// delivery IDs, in order. It returns nil only once Redis stored every message. Each
	// registered group of the topic receives every message; with no group registered yet the
	// message goes to the topic's backlog (see BacklogLimitDefault), which the first group
	// registered takes. A backlog at its limit drops its oldest messages (counted in the
	// result) or, under BacklogRefuse, refuses the batch with a *BacklogFullError.
	Publish(ctx context.Context, p *PublishParams) (PublishResult, error)

	// EnsureGroup registers a group on a topic, so that it receives every message published
	// from now on (and older ones where Capabilities.NewGroupReplay). Idempotent.
	EnsureGroup(ctx context.Context, p *EnsureGroupParams) error

	// Claim moves up to p.Count ready messages of a group to pending under a lease that
	// expires p.Lease after the Redis clock's now, increments each one's attempt and returns
	// them. With nothing ready it waits up to p.Block for a message (a bounded blocking
	// command, never a busy poll), then returns what it has, possibly nothing. A paused group
	// (Admin.PauseGroup) returns nothing. A group that is not registered fails with an error
	// matching ErrGroupDeleted when an operator deleted it (Admin.DeleteGroup or DeleteTopic
	// left a tombstone), else with one matching ErrGroupLost.
	Claim(ctx context.Context, p *ClaimParams) ([]Delivery, error)

	// RegisterAgain registers a group again for a running subscription that registered it
	// before and found it unregistered without a tombstone (ErrGroupLost): see the "vanished
	// is not deleted" rule at TombstoneTTLDefault. Under a tombstone it registers nothing and
	// fails with an error matching ErrGroupDeleted. A group registered already (by another
	// subscription) is left as it is. The topic's first group takes the topic's backlog, as
	// at any registration. With p.Ephemeral the consumer joins the group, as Ephemeral.Join
	// does.
	RegisterAgain(ctx context.Context, p *RegisterAgainParams) (RegisterAgainResult, error)

	// Ack removes deliveries from the group's pending set. Idempotent, and accepted from any
	// holder: the work is done. Acks of an attempt the caller no longer holds count as stale.
	Ack(ctx context.Context, p *AckParams) (AckResult, error)

	// Nack returns deliveries to ready after their delay, only where the caller still holds
	// that attempt (fencing); stale items are ignored and counted. An item whose attempt has
	// reached p.MaxDeliveries, or that is marked DeadLetter, goes to the dead-letter store
	// with its reason instead. An item marked Release goes back at once without counting as
	// an attempt (a subscriber closing with prefetched messages).
	Nack(ctx context.Context, p *NackParams) (NackResult, error)

	// Extend pushes the lease deadline of the held deliveries to Redis now + p.Lease and
	// returns the IDs the caller no longer holds.
	Extend(ctx context.Context, p *ExtendParams) (lost []string, err error)

	// Reclaim returns expired leases of a group to ready, dead-letters those whose attempts
	// reached p.MaxDeliveries, promotes due delayed messages, and gives a lease to any
	// delivery found pending without one (so it is reclaimed when that lease expires).
	// Any process may call it at any time; it is idempotent.
	Reclaim(ctx context.Context, p *ReclaimParams) (ReclaimResult, error)

	// DeadLetters lists a group's dead letters, oldest first, from p.Offset.
	DeadLetters(ctx context.Context, p *DeadLettersParams) ([]DeadLetter, error)

	// RequeueDeadLetters moves dead letters back to ready with their attempts reset: the IDs
	// given, or all of them when p.All. It returns how many were requeued. Params that select
	// nothing (neither IDs nor All) requeue nothing and fail with a *SelectionError matching
	// ErrNothingSelected: see RequeueParams.Validate.
	RequeueDeadLetters(ctx context.Context, p *RequeueParams) (int, error)

	// PurgeDeadLetters deletes a group's dead letters for good: the IDs given, or with p.All
	// every one (the oldest p.Limit when it is positive). It returns how many it deleted.
	// Params that select nothing (neither IDs nor All) delete nothing and fail with a
	// *SelectionError matching ErrNothingSelected: see PurgeParams.Validate.
	PurgeDeadLetters(ctx context.Context, p *PurgeParams) (int, error)

	// GroupNames lists the groups registered on a topic, sorted: the groups Admin.ListGroups
	// describes.
	GroupNames(ctx context.Context, topic string) ([]string, error)

	// Stats reports the state of one group of a topic and the topic's counters.
	Stats(ctx context.Context, p *StatsParams) (Stats, error)
}

// Capabilities declares where a backend's semantics differ. Conformance uses them to choose
// tests; the docs print them as a table.
type Capabilities struct {
	// FIFO: with one consumer and Concurrency 1, messages are delivered in publish order.
	FIFO bool
	// NewGroupReplay: a group created after messages were published can receive them.
	NewGroupReplay bool
	// Priorities: among the messages that are due, higher priority is claimed first, and due
	// order holds within a priority. A priority never makes a message due early. A backend
	// may bound how many delayed messages that fell due it ranks per claim (zset: BatchSize,
	// earliest due first), so a backlog larger than that ahead of a delayed message delays
	// its ranking by backlog/BatchSize claims.
	Priorities bool
	// NativeDelay: delayed messages live in the ready store itself and the claim takes them
	// when due (no promotion by Reclaim or by a poll).
	NativeDelay bool
	// OnTimeDelay: an idle consumer wakes for the earliest due time (not a poll interval),
	// so a delayed message is delivered within a few tens of milliseconds after it is due.
	OnTimeDelay bool
	// DueOrder: with one consumer and Concurrency 1, delayed messages are delivered in
	// due-time order (publish order among equal due times).
	DueOrder bool
	// Partitioned: every topic is spread over partitions, each an ordinary topic of the
	// backend beneath. Delivery IDs grow within a partition, and the orders above (FIFO,
	// DueOrder, Priorities) hold within one, that is among the messages of one key
	// (MetadataKey), not across the topic. The subscriptions of a group share the partitions;
	// a consumer that claims without a subscription claims from every partition.
	Partitioned bool
	// PendingOrphans: a delivery can reach pending without a lease record (list's BLMOVE
	// window); Reclaim recovers such orphans. Conformance injects one through Faults.
	PendingOrphans bool
}

// OutMessage is one message to publish.
type OutMessage struct {
	Envelope Envelope
	// Delay makes the message due this long after the Redis clock's now; zero is due now.
	// The Publisher passes at most MaxDelay.
	Delay time.Duration
	// Priority orders the messages that are due where Capabilities.Priorities: higher first.
	// Other backends ignore it.
	Priority int
}

// PublishParams are the inputs of Backend.Publish. Topic is required; no Messages is a
// no-op that returns an empty result (once Topic is a valid name).
type PublishParams struct {
	Topic    string
	Messages []OutMessage
}

// PublishResult is the outcome of Backend.Publish.
type PublishResult struct {
	// IDs are the messages' delivery IDs, in the order of PublishParams.Messages.
	IDs []string
	// BacklogDropped counts the backlog's oldest messages this publish dropped to keep the
	// backlog within its limit (the topic had no group): lost to every group to come.
	BacklogDropped int64
	// Reregistered names the groups this publish registered again: groups the publisher knew,
	// durable, whose state had vanished from Redis without a delete (RegisterAgain). Each
	// receives this publish, as the topic's other groups do. It is set with an error too,
	// when the publish failed after registering them.
	Reregistered []string
}

// EnsureGroupParams are the inputs of Backend.EnsureGroup. Topic and Group are required; the
// zero FromOldest starts a new group with the next publish (the topic's first group also
// takes its backlog).
type EnsureGroupParams struct {
	Topic string
	Group string
	// FromOldest makes a new group start from the oldest retained message, where the backend
	// has Capabilities.NewGroupReplay; otherwise the group starts with the next publish.
	FromOldest bool
}

// RegisterAgainParams are the inputs of Backend.RegisterAgain. Topic and Group are required;
// the zero value of the rest registers a durable group, with no delivery seen (After "") and
// no re-registration known (Known 0). Consumer and TTL matter only with Ephemeral, and must
// then be a valid name and positive (else a *NameError or *ConfigError).
type RegisterAgainParams struct {
	Topic string
	Group string
	// Ephemeral registers an ephemeral group and makes Consumer a member of it for TTL
	// (Ephemeral.Join); a durable group of the name fails with ErrNotEphemeral.
	Ephemeral bool
	Consumer  string
	TTL       time.Duration
	// After is the last delivery ID the subscription received, "" for none. A backend that
	// keeps the topic's history (streams) starts the group after it, or earlier, so that
	// every message published once the group vanished is delivered; others ignore it.
	After string
	// Known is how many re-registrations of the group the subscription knows of (the Times
	// of its last RegisterAgainResult): the count goes on from it when Redis lost its own.
	Known int64
}

// RegisterAgainResult reports what RegisterAgain found and did.
type RegisterAgainResult struct {
	// Registered is true when this call registered the group; false when it was registered
	// already (by another subscription, or another process).
	Registered bool
	// Times counts the group's re-registrations so far, and At is the latest (Redis clock).
	Times int64
	At    time.Time
	// Found says, for the log, what Redis held of the topic: nothing of its groups (its keys
	// were lost), or the topic without this group's registration.
	Found string
	// Backlog counts the messages the group took from the topic's backlog: those published
	// while no group was registered.
	Backlog int64
}

// ClaimParams are the inputs of Backend.Claim. Topic, Group, Consumer and a positive Lease
// are required: a zero Lease is a *ConfigError, since a lease that expires at once would make
// every claim a duplicate delivery. A zero Count claims one message; a zero Block returns at
// once.
type ClaimParams struct {
	Topic    string
	Group    string
	Consumer string
	// Count bounds the messages claimed; zero (or less) claims at most one. A backend may
	// claim fewer per call (list and zset: at most their BatchSize).
	Count int
	Lease time.Duration
	// Block bounds how long Claim waits when nothing is ready. Zero returns at once.
	Block time.Duration
	// Ordered claims the messages of each partition one at a time: at most one per
	// partition, and none from a partition whose previous delivery to the group is not
	// settled (acked, dead-lettered, or back in its place for a retry, whose delay the
	// partition waits out). Messages of one key then reach handlers in publish order. Only a
	// backend with Capabilities.Partitioned honours it (relq's adapters, through the
	// partitioned topics that pubsub serves); others ignore it.
	Ordered bool
}

// Delivery is one claimed message.
type Delivery struct {
	// ID is the delivery ID: unique and monotonic within the topic, never reused.
	ID string
	// Attempt counts deliveries of this message to its group, 1 on the first.
	Attempt int
	// Envelope is the decoded message. When Err is set it is empty.
	Envelope Envelope
	// Err is set (wrapping ErrCorruptEntry) when the stored entry could not be decoded; the
	// caller dead-letters it with Nack(DeadLetter) and the error as reason.
	Err error
}

// Held names a delivery attempt that a consumer holds: the fencing token.
type Held struct {
	ID      string
	Attempt int
}

// AckParams are the inputs of Backend.Ack. Topic, Group and Consumer are required; no Items
// acks nothing and returns a zero result.
type AckParams struct {
	Topic    string
	Group    string
	Consumer string
	Items    []Held
}

// AckResult reports what an Ack did.
type AckResult struct {
	Acked int // deliveries removed from pending
	Stale int // items whose attempt the caller no longer held (still acked if pending)
}

// NackItem is one delivery to nack.
type NackItem struct {
	ID      string
	Attempt int
	// Delay before the message is ready again; the Subscriber passes at most MaxDelay.
	Delay time.Duration
	// Reason is kept with a dead letter.
	Reason string
	// DeadLetter sends the delivery to the dead-letter store now (corrupt entries).
	DeadLetter bool
	// Release returns the delivery at once without counting the attempt (never handled).
	Release bool
}

// NackParams are the inputs of Backend.Nack. Topic, Group and Consumer are required; no Items
// nacks nothing and returns a zero result. An item whose Delay, Reason, DeadLetter and
// Release are all zero goes back ready at once, its attempt counted (a plain retry).
type NackParams struct {
	Topic    string
	Group    string
	Consumer string
	Items    []NackItem
	// MaxDeliveries: an item whose attempt is >= MaxDeliveries is dead-lettered. Zero means
	// no limit.
	MaxDeliveries int
}

// NackResult reports what a Nack did.
type NackResult struct {
	Requeued     int
	DeadLettered int
	Stale        int // items the caller no longer held: ignored
}

// ExtendParams are the inputs of Backend.Extend. Topic, Group, Consumer and a positive Lease
// are required (a zero Lease is a *ConfigError: it would end the leases it means to extend);
// no Items extends nothing and loses nothing.
type ExtendParams struct {
	Topic    string
	Group    string
	Consumer string
	Items    []Held
	Lease    time.Duration
}

// ReclaimParams are the inputs of Backend.Reclaim. Topic and Group are required; the zero
// value of the rest reclaims with no delivery limit, the default orphan lease and the
// backend's batch size.
type ReclaimParams struct {
	Topic string
	Group string
	// MaxDeliveries: an expired delivery whose attempt is >= MaxDeliveries is dead-lettered
	// with reason "lease expired after N attempts". Zero means no limit.
	MaxDeliveries int
	// OrphanLease is the lease given to a pending delivery found without one; zero:
	// pubsub.LeaseDefault.
	OrphanLease time.Duration
	// Count bounds the deliveries handled in one call; the backend picks a default if zero.
	Count int
}

// ReclaimResult reports what a Reclaim did.
type ReclaimResult struct {
	Reclaimed    int // expired leases returned to ready
	DeadLettered int
	Orphans      int // pending deliveries without a lease that got one
	Promoted     int // delayed messages that became ready
	// Removed counts the consumers of ended subscriptions the call deleted (streams, which
	// keeps a consumer per subscription in Redis), so that a caller goes on at once while
	// there are more.
	Removed int
	// NextExpiry is how long, on the Redis clock, until the earliest lease of the group that
	// is still pending after this call's own work expires (or, on a backend that promotes
	// delayed messages in Reclaim, the earliest of those is due, if sooner), so that the
	// caller can run Reclaim again right then rather than at its next periodic sweep. A lease already due (the call
	// stopped at its Count with more expired) is reported as 1ms, never as zero or less.
	// Zero means unknown: nothing is pending, or the backend does not report it.
	NextExpiry time.Duration
}

// StatsParams are the inputs of Backend.Stats. Both names are required: the zero value is a
// *NameError, as every empty topic or group name is.
type StatsParams struct {
	Topic string
	Group string
}

// Stats is the state of one group of a topic, read from Redis, so it is global across
// processes.
type Stats struct {
	Topic   string
	Group   string
	Ready   int64 // due and waiting to be claimed
	Delayed int64 // waiting for their due time (including nack backoff)
	Pending int64 // claimed and not yet acked (in flight)
	Dead    int64
	// OldestPendingAge is how long the oldest pending delivery has been pending; zero if none.
	OldestPendingAge time.Duration
	// OldestReadyAge is how long the oldest ready message has been ready; zero if none.
	OldestReadyAge time.Duration
	// Paused reports a group paused with Admin.PauseGroup: its claims return nothing.
	Paused bool
	// ReregisteredAt is when the group was last registered again after its state vanished
	// from Redis, by a running subscription or a publisher that knew it (Counters.Reregistered
	// counts them); zero if never.
	ReregisteredAt time.Time
	Counters       Counters
}

// Counters are cumulative per group (Published counts messages routed to the group).
type Counters struct {
	Published    int64
	Claimed      int64
	Acked        int64
	Nacked       int64
	Reclaimed    int64
	DeadLettered int64
	StaleAcks    int64
	StaleNacks   int64
	// Reregistered counts the times the group was registered again after its state vanished
	// from Redis (Backend.RegisterAgain: by a running subscription, or on list and zset by a
	// publisher that knew the group). Redis keeps it with the group, so a Redis that loses
	// everything starts it again from the count the processes that registered it remember: a
	// lower bound when none of them saw the last one.
	Reregistered int64
}
