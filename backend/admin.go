package backend

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Admin inspects and steers what a backend keeps in Redis: topics and groups, messages in
// every state, pausing and deleting. It is the control plane that the relq CLI, the metrics
// collector and the web dashboard use, kept apart from the data-plane Backend so that a
// backend adapter stays small and an application that only publishes and consumes never
// links it in. Every backend of relq implements both.
//
// Every method is one Lua script or one atomic command per call, and costs O(page · log N)
// in Redis, never O(N) in a queue's size: listings are paged with a cursor, and deleting a
// group or a topic with many messages is done in bounded steps (the call returns once every
// step ran; a step that fails leaves the group or topic marked for deletion, which the next
// delete, or any publish to it, continues).
//
// Deleting is safe while subscribers run: a subscription whose group was deleted stops with
// ErrGroupDeleted (logged, and its output channel closed), its acks and nacks of messages it
// still held are stale no-ops, and no key of another topic or group is touched. A publish to
// a deleted topic creates it again, as a new topic whose first messages wait in its backlog.
type Admin interface {
	// ListTopics lists the topics under the backend's prefix that have a group or a backlog,
	// sorted by name, found with SCAN (on every primary of a Cluster).
	ListTopics(ctx context.Context) ([]TopicInfo, error)

	// Topic describes one topic: its groups and its backlog. ErrTopicNotFound when it has
	// neither.
	Topic(ctx context.Context, topic string) (TopicInfo, error)

	// ListGroups lists the groups registered on a topic, sorted by name.
	ListGroups(ctx context.Context, topic string) ([]GroupInfo, error)

	// Stats reports the state of one group of a topic and its counters.
	Stats(ctx context.Context, p *StatsParams) (Stats, error)

	// Messages lists one page of a group's messages in one state, in the order they would be
	// delivered (ready), fall due (delayed), expire (pending) or died (dead). An ID that
	// leaves the state between two pages is skipped, never listed twice.
	Messages(ctx context.Context, p *MessagesParams) (MessagePage, error)

	// Message shows one message of a group, wherever it is. ErrMessageNotFound when the group
	// does not hold it.
	Message(ctx context.Context, p *MessageParams) (MessageInfo, error)

	// DeleteMessage removes one message from a group for good, in any state; other groups of
	// the topic keep their copy. A holder's later ack or nack of it is stale.
	// ErrMessageNotFound when the group does not hold it.
	DeleteMessage(ctx context.Context, p *MessageParams) error

	// RunMessage makes a delayed message of a group due now. ErrMessageNotFound when the
	// group does not hold it; ErrNotDelayed when it is held but not delayed.
	RunMessage(ctx context.Context, p *MessageParams) error

	// DeadLetters, RequeueDeadLetters and PurgeDeadLetters are Backend's.
	DeadLetters(ctx context.Context, p *DeadLettersParams) ([]DeadLetter, error)
	RequeueDeadLetters(ctx context.Context, p *RequeueParams) (int, error)
	PurgeDeadLetters(ctx context.Context, p *PurgeParams) (int, error)

	// PauseGroup stops deliveries to a group: its claims return nothing (a blocked claim
	// sleeps its Block and returns nothing) while publishes still store messages for it, and
	// leases already taken run their course. Idempotent. ErrGroupNotFound when the group is
	// not registered.
	PauseGroup(ctx context.Context, topic, group string) error

	// ResumeGroup undoes PauseGroup. Idempotent. ErrGroupNotFound when not registered.
	ResumeGroup(ctx context.Context, topic, group string) error

	// DeleteGroup unregisters a group and deletes everything it holds (ready, delayed,
	// pending, dead, counters); later publishes no longer route to it. When it was the
	// topic's last group and the topic has no backlog, the topic's keys go too.
	// ErrGroupNotFound when not registered.
	DeleteGroup(ctx context.Context, topic, group string) error

	// DeleteTopic deletes every key of a topic: its messages, groups and backlog.
	// ErrTopicNotFound when it has no key.
	DeleteTopic(ctx context.Context, topic string) error
}

// MessageState is where a message of a group is.
type MessageState string

// The states of a message in a group.
const (
	StateReady   MessageState = "ready"   // due, waiting to be claimed
	StateDelayed MessageState = "delayed" // waiting for its due time (publish delay, nack backoff)
	StatePending MessageState = "pending" // claimed, under a lease
	StateDead    MessageState = "dead"    // in the dead-letter store
)

// States lists the message states in the order tools show them.
var States = []MessageState{StateReady, StateDelayed, StatePending, StateDead}

// ParseState returns the state named s, or an error naming the states.
func ParseState(s string) (MessageState, error) {
	for _, st := range States {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("relq: unknown message state %q: want ready, delayed, pending or dead", s)
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name   string
	Groups []string
	// Backlog counts the messages published while the topic had no group, kept for the first
	// group that registers (see the backlog rule in docs/semantics.md).
	Backlog int64
	// BacklogDropped counts the messages the backlog dropped, the oldest first, to stay
	// within its limit (BacklogDropOldest) since the topic's keys were created: they never
	// reached a group.
	BacklogDropped int64
}

// GroupInfo describes a group of a topic.
type GroupInfo struct {
	Topic  string
	Name   string
	Paused bool
	// Ephemeral groups are deleted when their last member leaves; Expires is when the latest
	// membership runs out (Redis clock).
	Ephemeral bool
	Expires   time.Time
}

// MessagesParams are the inputs of Admin.Messages. Topic, Group and State are required (the
// zero State names no state and is an error); the zero Cursor and Count read the first page,
// of 100 (a backend may return fewer per call, at most its BatchSize).
type MessagesParams struct {
	Topic string
	Group string
	State MessageState
	// Cursor continues a listing: MessagePage.Next of the page before; "" starts at the top.
	Cursor string
	// Count bounds the page; zero: 100.
	Count int
}

// MessagePage is one page of Admin.Messages.
type MessagePage struct {
	Messages []MessageInfo
	// Next is the cursor of the next page; "" when this page is the last.
	Next string
}

// MessageParams name one message of a group: the inputs of Admin.Message, DeleteMessage and
// RunMessage. Topic and Group are required; an ID the group does not hold, the empty one
// included, is ErrMessageNotFound.
type MessageParams struct {
	Topic string
	Group string
	ID    string
}

// MessageInfo is one message of a group with where it is and its history.
type MessageInfo struct {
	ID    string
	Topic string
	Group string
	State MessageState
	// Envelope is the decoded message; when the stored bytes cannot be decoded it is empty,
	// Raw holds them and Err says why. BodyMissing reports a message whose body is gone.
	Envelope    Envelope
	Raw         []byte
	Err         error
	BodyMissing bool
	// Attempts counts the deliveries so far (for a pending message, the current one included).
	Attempts int
	// Priority is the message's priority where the backend keeps one.
	Priority int
	// Due is when a delayed message falls due (Redis clock); zero otherwise.
	Due time.Time
	// Consumer holds a pending message until LeaseLeft from now (Redis clock; negative:
	// expired, waiting for Reclaim). Since is when it was claimed.
	Consumer  string
	LeaseLeft time.Duration
	Since     time.Time
	// Reason and DeadAt describe a dead letter.
	Reason string
	DeadAt time.Time
}

// Errors of the Admin API.
var (
	// ErrTopicNotFound reports a topic that has no key under the prefix.
	ErrTopicNotFound = errors.New("relq: topic not found")
	// ErrGroupNotFound reports a group that is not registered on its topic.
	ErrGroupNotFound = errors.New("relq: group not found")
	// ErrMessageNotFound reports a message ID that the group does not hold.
	ErrMessageNotFound = errors.New("relq: message not found")
	// ErrNotDelayed reports RunMessage of a message that is not delayed.
	ErrNotDelayed = errors.New("relq: message is not delayed")
	// ErrGroupDeleted reports a subscription, or a call, whose group an operator deleted
	// (Admin.DeleteGroup or DeleteTopic, through the API, the CLI or the dashboard): the
	// delete left a tombstone, which lasts the backend's TombstoneTTL (TombstoneTTLDefault).
	ErrGroupDeleted = errors.New("relq: group deleted")
	// ErrGroupLost reports a call on a group that is not registered and has no tombstone: its
	// state vanished from Redis (a restart without persistence, a failover to a replica that
	// had not synced, FLUSHALL, keys deleted by another client), or it was an ephemeral group
	// that ended. A running subscription that meets it registers the group again
	// (Backend.RegisterAgain) and goes on; it is not a delete.
	ErrGroupLost = errors.New("relq: group not registered (its state vanished)")
	// ErrNotEphemeral reports Join of a group registered as durable.
	ErrNotEphemeral = errors.New("relq: group is durable, not ephemeral")
	// ErrBadCursor reports a cursor that no page of this listing returned.
	ErrBadCursor = errors.New("relq: invalid cursor")
	// ErrTooDeep reports a listing page, or a search by ID, that would have to read deeper
	// into a queue than the backend reads for one call: a queue that Redis can read only by
	// position (the list backend's ready LIST) or search only by scanning.
	ErrTooDeep = errors.New("relq: too deep in the queue")
)
