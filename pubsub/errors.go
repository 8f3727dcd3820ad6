package pubsub

import "github.com/relq/relq/backend"

// The errors a Publisher or Subscriber returns, for errors.Is and errors.As. They are the
// backend package's own values and types, named here too so that a Watermill user needs only
// this package; backend documents each.
var (
	ErrClosed           = backend.ErrClosed
	ErrInvalidConfig    = backend.ErrInvalidConfig
	ErrInvalidName      = backend.ErrInvalidName
	ErrNilMessage       = backend.ErrNilMessage
	ErrMessageTooLarge  = backend.ErrMessageTooLarge
	ErrDelayTooLong     = backend.ErrDelayTooLong
	ErrReservedMetadata = backend.ErrReservedMetadata
	ErrBacklogFull      = backend.ErrBacklogFull
	ErrRedisFull        = backend.ErrRedisFull
	ErrRedisVersion     = backend.ErrRedisVersion
	ErrStorageLayout    = backend.ErrStorageLayout
	ErrGroupDeleted     = backend.ErrGroupDeleted
	ErrNotEphemeral     = backend.ErrNotEphemeral
)

type (
	// ConfigError is a PublisherConfig, SubscriberConfig or backend option that is invalid.
	ConfigError = backend.ConfigError
	// NameError is an invalid topic or group name.
	NameError = backend.NameError
	// SizeError is a message above PublisherConfig.MaxMessageBytes.
	SizeError = backend.SizeError
	// DelayError is a delay beyond MaxDelay.
	DelayError = backend.DelayError
	// MetadataError is a metadata key with ReservedPrefix that relq does not know.
	MetadataError = backend.MetadataError
	// BacklogFullError is a publish refused under backend.BacklogRefuse.
	BacklogFullError = backend.BacklogFullError
)

// DefaultGroup is the consumer group of a SubscriberConfig that names none.
const DefaultGroup = backend.DefaultGroup
