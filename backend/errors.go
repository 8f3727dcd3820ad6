package backend

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends translate their failures into these at the edge, so callers can
// use errors.Is whatever the backend.
var (
	// ErrInvalidName reports an empty or malformed topic, group, consumer or prefix name.
	ErrInvalidName = errors.New("relq: invalid name")
	// ErrMessageTooLarge reports a message whose encoded size exceeds the configured limit.
	ErrMessageTooLarge = errors.New("relq: message too large")
	// ErrDelayTooLong reports a delay beyond MaxDelay.
	ErrDelayTooLong = errors.New("relq: delay beyond MaxDelay")
	// ErrReservedMetadata reports metadata that uses relq's reserved key space wrongly.
	ErrReservedMetadata = errors.New("relq: reserved metadata key")
	// ErrNilMessage reports a nil *message.Message passed to Publish.
	ErrNilMessage = errors.New("relq: nil message")
	// ErrClosed reports a call on a closed Publisher or Subscriber.
	ErrClosed = errors.New("relq: closed")
	// ErrRedisVersion reports a Redis server older than the minimum relq needs (6.2).
	ErrRedisVersion = errors.New("relq: redis version not supported")
	// ErrNotImplemented reports an operation a backend does not support.
	ErrNotImplemented = errors.New("relq: not implemented by this backend")
	// ErrCorruptEntry reports an entry in Redis that cannot be decoded.
	ErrCorruptEntry = errors.New("relq: corrupt entry")
	// ErrInvalidConfig reports a configuration field with an invalid value.
	ErrInvalidConfig = errors.New("relq: invalid config")
	// ErrStorageLayout reports keys in Redis laid out by a relq version this one cannot read
	// (older or newer); the error names both layouts and the upgrade step.
	ErrStorageLayout = errors.New("relq: storage layout not supported")
	// ErrRedisFull reports a write that Redis refused because it reached maxmemory (policy
	// noeviction): a Publish, or a new group's registration. Consumers still claim, ack,
	// nack and extend on a full Redis, so draining the backlog frees memory and Publish
	// works again; retrying later is safe.
	ErrRedisFull = errors.New("relq: redis is full (maxmemory reached)")
)

// NameError says which name was rejected and why. It matches ErrInvalidName with errors.Is.
type NameError struct {
	Kind   string // "topic", "group", "consumer" or "prefix"
	Name   string
	Reason string
}

// Error describes the failure for logs and users.
func (e *NameError) Error() string {
	return fmt.Sprintf("relq: invalid %s name %q: %s", e.Kind, e.Name, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidName) true.
func (e *NameError) Is(target error) bool { return target == ErrInvalidName }

// SizeError says which message was too large. It matches ErrMessageTooLarge with errors.Is.
type SizeError struct {
	UUID  string
	Size  int
	Limit int
}

// Error describes the failure for logs and users.
func (e *SizeError) Error() string {
	return fmt.Sprintf("relq: message %s is %d bytes encoded, over the limit of %d", e.UUID, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrMessageTooLarge) true.
func (e *SizeError) Is(target error) bool { return target == ErrMessageTooLarge }

// DelayError says which message asked for a delay beyond MaxDelay, and where. It matches
// ErrDelayTooLong with errors.Is.
type DelayError struct {
	UUID  string
	Key   string // the metadata key that set the delay, or "NackBackoff"
	Value string // the delay as the key gave it
}

// Error describes the failure for logs, users and dead-letter reasons.
func (e *DelayError) Error() string {
	return fmt.Sprintf("relq: message %s: %s %s is a delay beyond MaxDelay (%s)", e.UUID, e.Key, e.Value, MaxDelay)
}

// Is makes errors.Is(err, ErrDelayTooLong) true.
func (e *DelayError) Is(target error) bool { return target == ErrDelayTooLong }

// MetadataError says which metadata key was rejected. It matches ErrReservedMetadata.
type MetadataError struct {
	UUID   string
	Key    string
	Reason string
}

// Error describes the failure for logs and users.
func (e *MetadataError) Error() string {
	return fmt.Sprintf("relq: message %s: metadata %q: %s", e.UUID, e.Key, e.Reason)
}

// Is makes errors.Is(err, ErrReservedMetadata) true.
func (e *MetadataError) Is(target error) bool { return target == ErrReservedMetadata }

// ConfigError names the configuration field that is invalid. It matches ErrInvalidConfig.
type ConfigError struct {
	Field  string
	Reason string
}

// Error describes the failure for logs and users.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("relq: invalid config: %s %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// PartialError reports a batch call (Ack, Nack) of a partitioned topic that failed on some
// partitions: the topic spans several primaries, and one of them can fail alone. Failed lists
// the indexes, in the call's Items, of the items to send again (possibly all of them); every
// other item is settled. A caller that sends those again later, and its next results at once,
// keeps the other partitions moving while one primary fails over.
type PartialError struct {
	Failed []int
	Err    error // the first failure
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("relq: %d items of the call not settled: %v", len(e.Failed), e.Err)
}

func (e *PartialError) Unwrap() error { return e.Err }
