package pubsub

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
)

// Metadata keys. Keys starting with ReservedPrefix belong to relq: the subscriber sets the
// delivery keys on every message it delivers (and the publisher drops them, so forwarding a
// received message works); the control keys are read by the publisher and subscriber; any
// other key with the prefix is rejected with ErrReservedMetadata, to catch typos.
const (
	ReservedPrefix = "_relq_"

	// Set on delivered messages.
	MetadataDeliveryID = "_relq_delivery_id"
	MetadataAttempt    = "_relq_attempt"
	MetadataTopic      = "_relq_topic"
	MetadataGroup      = "_relq_group"

	// Control keys, set with the helpers below. Publish reads the delay and priority and
	// does not store them with the message: they instruct one publish, and a forwarded
	// message should not be delayed again.
	MetadataDelayMs     = "_relq_delay_ms"      // publish: deliver this many ms after publish
	MetadataPriority    = "_relq_priority"      // publish: priority (backends with Priorities)
	MetadataNackDelayMs = "_relq_nack_delay_ms" // nack: redeliver after this many ms
	MetadataNackReason  = "_relq_nack_reason"   // nack: the reason kept if it dead-letters

	// MetadataKey is a message's partition key (SetKey). It is stored with the message and
	// delivered with it, so a forwarded message keeps its key.
	MetadataKey = backend.MetadataKey

	// Watermill's components/delay keys, honoured on publish.
	WatermillDelayedUntil = "_watermill_delayed_until"
	WatermillDelayedFor   = "_watermill_delayed_for"
)

// MaxDelay is the longest delay relq accepts: backend.MaxDelay.
const MaxDelay = backend.MaxDelay

// msDelay converts a delay in whole milliseconds, as the metadata keys hold it: a negative
// one is no delay, and one beyond MaxDelay is reported (ok false) before a multiplication
// that could overflow into a past due time.
func msDelay(ms int64) (d time.Duration, ok bool) {
	switch {
	case ms <= 0:
		return 0, true
	case ms > MaxDelay.Milliseconds():
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// DeliveryID returns the delivery ID of a message received from a Subscriber, or "".
func DeliveryID(msg *message.Message) string { return msg.Metadata.Get(MetadataDeliveryID) }

// Attempt returns how many times this message has been delivered to its group, counting this
// delivery (1 on the first), or 0 for a message that did not come from a Subscriber.
func Attempt(msg *message.Message) int {
	n, _ := strconv.Atoi(msg.Metadata.Get(MetadataAttempt))
	return n
}

// maxDeliveriesKey is the context key under which a subscription's messages carry its
// MaxDeliveries.
type maxDeliveriesKey struct{}

// withMaxDeliveries is ctx carrying a subscription's MaxDeliveries (0: no limit).
func withMaxDeliveries(ctx context.Context, limit int) context.Context {
	return context.WithValue(ctx, maxDeliveriesKey{}, limit)
}

// MaxDeliveriesOf returns the MaxDeliveries of the Subscriber that delivered msg, read from
// the message's context: the delivery whose Attempt reaches it is the message's last, since
// its nack (or its lease expiring) dead-letters it. limit is 0 when that Subscriber has no
// limit (MaxDeliveries -1). ok is false for a message that did not come from a Subscriber, or
// whose context was replaced by one not derived from it. Middleware reads the limit here
// rather than from a setting of its own, so that the two cannot disagree.
func MaxDeliveriesOf(msg *message.Message) (limit int, ok bool) {
	limit, ok = msg.Context().Value(maxDeliveriesKey{}).(int)
	return limit, ok
}

// SetDelay makes a message due d after it is published, with millisecond precision on the
// Redis clock. It overrides Watermill's delay metadata. Publish rejects a d beyond MaxDelay.
func SetDelay(msg *message.Message, d time.Duration) {
	msg.Metadata.Set(MetadataDelayMs, strconv.FormatInt(d.Milliseconds(), 10))
}

// SetPriority sets a message's priority: on backends with Capabilities.Priorities, among the
// messages that are due, higher priorities are delivered first. Other backends ignore it.
func SetPriority(msg *message.Message, p int) {
	msg.Metadata.Set(MetadataPriority, strconv.Itoa(p))
}

// SetKey sets a message's partition key: on a partitioned topic, messages of one key go to one
// partition, by a hash that never changes. Unpartitioned topics ignore it.
func SetKey(msg *message.Message, key string) {
	msg.Metadata.Set(MetadataKey, key)
}

// Key returns a message's partition key, "" if it has none.
func Key(msg *message.Message) string { return msg.Metadata.Get(MetadataKey) }

// SetNackDelay sets how long after a Nack the message is redelivered, overriding the
// subscriber's backoff for this delivery. Call it before msg.Nack(). A d beyond MaxDelay
// sends the message to the dead-letter store instead.
func SetNackDelay(msg *message.Message, d time.Duration) {
	msg.Metadata.Set(MetadataNackDelayMs, strconv.FormatInt(d.Milliseconds(), 10))
}

// SetNackReason sets the reason kept with the message if this Nack sends it to the dead-letter
// store (its last allowed attempt), so `relq dead ls` shows why it failed rather than only
// how often. Call it before msg.Nack(); middleware.Backoff sets it from the handler's error.
// Reasons longer than MaxNackReason bytes are cut.
func SetNackReason(msg *message.Message, reason string) {
	msg.Metadata.Set(MetadataNackReason, reason)
}

// MaxNackReason bounds the reason kept with a dead letter, so a huge error cannot bloat Redis.
const MaxNackReason = 1024

// nackReason is the reason the handler set with SetNackReason, cut to MaxNackReason bytes.
func nackReason(msg *message.Message) string {
	r := msg.Metadata.Get(MetadataNackReason)
	if len(r) > MaxNackReason {
		r = strings.ToValidUTF8(r[:MaxNackReason], "")
	}
	return r
}

// isDeliveryKey reports keys that the subscriber sets on delivery.
func isDeliveryKey(k string) bool {
	switch k {
	case MetadataDeliveryID, MetadataAttempt, MetadataTopic, MetadataGroup, MetadataNackDelayMs, MetadataNackReason:
		return true
	}
	return false
}

// isReserved reports keys in relq's namespace.
func isReserved(k string) bool { return strings.HasPrefix(k, ReservedPrefix) }
