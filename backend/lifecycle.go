package backend

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The backlog rule. A message published to a topic that has no group is kept in the topic's
// backlog, which the first group registered on the topic takes (it receives the backlog as
// if it had been registered before those publishes). The backlog is bounded, so a topic that
// nobody subscribes to never grows without end: it keeps at most BacklogLimit messages, and
// its keys expire BacklogTTL after the last publish while no group registers. What a publish
// beyond the limit does is the backend's BacklogFull policy: BacklogDropOldest (the default)
// stores the batch and drops the oldest messages, which are counted (TopicInfo.BacklogDropped,
// PublishResult.BacklogDropped) and logged by the Publisher; BacklogRefuse stores nothing
// and fails the publish with a *BacklogFullError. Admin.Topic and the CLI show the backlog's
// size and drops. A topic with neither a group nor a backlog has no key in Redis.
const (
	// BacklogLimitDefault is the backends' default bound on a topic's backlog.
	BacklogLimitDefault = 10_000
	// BacklogTTLDefault is the backends' default life of a backlog after its last publish.
	BacklogTTLDefault = 24 * time.Hour
)

// BacklogPolicy is what a publish does to a topic whose backlog is at its limit: see the
// backlog rule above, and docs/semantics.md for which to choose.
type BacklogPolicy string

const (
	// BacklogDropOldest stores the publish and drops the backlog's oldest messages: the
	// newest are kept, the publisher never blocks. The default.
	BacklogDropOldest BacklogPolicy = "drop-oldest"
	// BacklogRefuse stores nothing and fails the publish with a *BacklogFullError (matching
	// ErrBacklogFull) while the backlog is full: nothing is lost silently, and the publisher
	// must wait for a group, or give up.
	BacklogRefuse BacklogPolicy = "refuse"
)

// ErrBacklogFull reports a publish refused because the topic has no group and its backlog is
// at its limit, under BacklogRefuse. Nothing of the batch was stored.
var ErrBacklogFull = errors.New("relq: backlog full")

// BacklogFullError is the error of a publish refused under BacklogRefuse.
type BacklogFullError struct {
	Topic string
	Limit int
}

func (e *BacklogFullError) Error() string {
	return fmt.Sprintf("relq: publish to %q refused: the topic has no group and its backlog holds its limit of %d messages", e.Topic, e.Limit)
}

// Unwrap makes the error match ErrBacklogFull.
func (e *BacklogFullError) Unwrap() error { return ErrBacklogFull }

// Vanished is not deleted. A group's registration can disappear from Redis without anyone
// deleting it: a Redis without persistence restarts empty, a failover promotes a replica that
// had not synced, FLUSHALL, keys deleted by another client. Its running subscriptions then
// register it again within a claim cycle (Backend.RegisterAgain), log it at error level, and
// consume what is published from then on, including what reached the topic's backlog
// meanwhile; the group's Stats count it (Counters.Reregistered, ReregisteredAt). Only an
// operator's delete (Admin.DeleteGroup or DeleteTopic) stops them, with ErrGroupDeleted: it
// leaves a tombstone of the group for the backend's TombstoneTTL, and a subscription that
// finds its group unregistered stops when a tombstone is there, and registers it again when
// none is. A subscription cut off from Redis for longer than TombstoneTTL can therefore bring
// back a group deleted meanwhile; registering the group anew (Subscribe) removes its tombstone.
const (
	// TombstoneTTLDefault is how long, by default, a deleted group's tombstone lasts: far
	// longer than a running subscription takes to notice the delete (its next claim, within
	// a second while Redis answers), so that only one cut off from Redis for a day could miss
	// it.
	TombstoneTTLDefault = 24 * time.Hour
)

// Ephemeral is implemented by backends that keep ephemeral groups: groups that exist only
// while a subscriber of theirs is alive (request-reply, per-instance broadcast). The
// Subscriber uses it when SubscriberConfig.Ephemeral is set.
type Ephemeral interface {
	// Join registers consumer as a live member of the ephemeral group p.Group, registering the
	// group when it is new, until p.TTL from the Redis clock's now. Subscribers call it again
	// before that (it extends the membership). A group registered as durable stays durable:
	// ErrNotEphemeral.
	Join(ctx context.Context, p *JoinParams) error

	// Leave ends consumer's membership. The last member's Leave deletes the group as
	// DeleteGroup does. A group whose members all stopped calling Join (their process died)
	// is deleted by the backend once their TTL passed: by the next publish to the topic, by
	// any subscriber's Reclaim on it, or, when every group of the topic is ephemeral, by Redis
	// itself (the topic's keys expire).
	Leave(ctx context.Context, p *LeaveParams) error
}

// JoinParams are the inputs of Ephemeral.Join. Topic, Group, Consumer and a positive TTL are
// required (a zero TTL is a *ConfigError: the membership would end as it began); the zero
// Renew is a first Join, which registers the group when it is new.
type JoinParams struct {
	Topic    string
	Group    string
	Consumer string
	// TTL is how long the membership lasts without another Join.
	TTL time.Duration
	// Renew extends a membership and never registers the group: when the group is not
	// registered (deleted with Admin, expired, or lost by a failover) Join fails with an
	// error matching ErrGroupDeleted, so that a subscription's periodic renewal cannot bring
	// back a group that was deleted under it. A running subscription renews with it; its
	// first Join does not.
	Renew bool
}

// LeaveParams are the inputs of Ephemeral.Leave. Every field is required: the zero value is a
// *NameError, as every empty name is.
type LeaveParams struct {
	Topic    string
	Group    string
	Consumer string
}

// LeaseDefault is the lease a Subscriber takes unless configured otherwise. Backends use it
// for an entry they hold no lease record for (left by another client of the same group), so
// that such an entry is reclaimed no sooner than a relq consumer's would be.
const LeaseDefault = 30 * time.Second
