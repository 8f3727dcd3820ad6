package streams

import (
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Format is how entries are laid out in the stream, and how the stream is named.
type Format string

const (
	// FormatNative stores one field, "e", holding relq's binary envelope
	// (backend.EncodeEnvelope), in the stream {prefix:topic}:stream.
	FormatNative Format = "native"
	// FormatWatermill is watermill-redisstream's layout, so both libraries can share a stream:
	// the stream key is the bare topic name and each entry has the fields
	// _watermill_message_uuid, metadata (a msgpack map) and payload. relq's own keys of the
	// topic are {topic}:<prefix>:..., in the stream's Cluster slot.
	FormatWatermill Format = "watermill-redisstream"
)

// Retention says when acknowledged entries leave the stream.
type Retention string

const (
	// RetainUntilTrimmed keeps entries until MaxLen or MaxAge trims them (never, without
	// either): the stream keeps its history, and new groups can replay it.
	RetainUntilTrimmed Retention = "until-trimmed"
	// DeleteOnAck deletes an entry (XDEL) as soon as every consumer group of the stream has
	// read and acknowledged it and none keeps it as a dead letter, so the stream holds only
	// what some group still needs.
	DeleteOnAck Retention = "delete-on-ack"
)

// Defaults of Options.
const (
	// PrefixDefault starts every key relq adds for a topic.
	PrefixDefault = "relq"
	// BatchSizeDefault bounds the entries one script call handles where the caller sets no
	// bound.
	BatchSizeDefault = 1000
)

// ParkedConsumer is the consumer name under which a group's PEL holds deliveries waiting for
// a retry (nacked, released, reclaimed, requeued, delayed). It is reserved: Claim, Ack, Nack
// and Extend reject it as a consumer name.
const ParkedConsumer = "relq-parked"

// Options configure a streams Backend.
type Options struct {
	// Prefix namespaces relq's keys: {prefix:topic}:... in FormatNative, {topic}:prefix:... in
	// FormatWatermill. Defaults to PrefixDefault ("relq").
	Prefix string
	// Format is the stream layout. Defaults to FormatNative.
	Format Format
	// Retention says when acknowledged entries are deleted. Defaults to RetainUntilTrimmed.
	Retention Retention
	// MaxLen, when positive, trims the stream to about that many entries on every publish
	// (XTRIM MAXLEN ~): whole nodes are removed, so it may hold up to a node's worth more
	// (stream-node-max-entries, 100 by default). Trimming removes the oldest entries whether or
	// not every group is done with them. Defaults to 0 (no bound).
	MaxLen int64
	// MaxAge, when positive, trims entries published longer ago than that on every publish
	// (XTRIM MINID ~), with the same caveats as MaxLen. Defaults to 0 (no bound).
	MaxAge time.Duration
	// BatchSize bounds the work of one script call where the caller gives no bound: unread
	// entries scanned per claim, expired leases per Reclaim, dead letters requeued or purged
	// per round trip. Defaults to BatchSizeDefault (1000).
	BatchSize int
	// ConsumerIdleTimeout is how long after a Reclaim found it holding nothing (its leases
	// ended) a consumer counts as quiet: Reclaim deletes quiet consumers that hold nothing (XGROUP DELCONSUMER;
	// one that holds entries stays until they are acked or reclaimed), so that the consumer
	// names of ended subscriptions and stopped processes do not pile up. A running
	// subscription's consumer deleted while idle is made again by its next claim that takes a
	// message (Redis makes a consumer only then), and nothing of it is lost: it held nothing.
	// Defaults to 0: the consumer's lease (ClaimParams.Lease, the subscriber's Lease); -1 (any
	// negative) keeps every consumer. Consumers of other programs (watermill-redisstream's)
	// are never deleted.
	ConsumerIdleTimeout time.Duration
	// BacklogLimit bounds a topic's backlog (what is published while the stream has no
	// group): each such publish keeps the newest that many entries (XTRIM MAXLEN =, exact; a
	// stream longer than that by more than the batch loses at most BatchSize more per publish).
	// Defaults to backend.BacklogLimitDefault.
	BacklogLimit int
	// BacklogTTL is how long a backlog outlives the last publish to it while no group
	// registers: those publishes set it as the expiry of the topic's keys. Defaults to
	// backend.BacklogTTLDefault.
	BacklogTTL time.Duration
	// TombstoneTTL is how long a group deleted through the Admin API (DeleteGroup,
	// DeleteTopic: the CLI, the dashboard) stays marked deleted: its running subscriptions
	// that find it unregistered within that time stop with backend.ErrGroupDeleted, where
	// finding no mark makes them register it again (its state vanished; see
	// backend.TombstoneTTLDefault). Give every process of a deployment the same value.
	// Defaults to backend.TombstoneTTLDefault (24h); negative is invalid.
	// BacklogFull is what a publish the full backlog cannot hold does:
	// backend.BacklogDropOldest (the default) or backend.BacklogRefuse.
	BacklogFull  backend.BacklogPolicy
	TombstoneTTL time.Duration
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = PrefixDefault
	}
	if o.Format == "" {
		o.Format = FormatNative
	}
	if o.Retention == "" {
		o.Retention = RetainUntilTrimmed
	}
	if o.BatchSize == 0 {
		o.BatchSize = BatchSizeDefault
	}
	if o.BacklogLimit == 0 {
		o.BacklogLimit = backend.BacklogLimitDefault
	}
	if o.BacklogTTL == 0 {
		o.BacklogTTL = backend.BacklogTTLDefault
	}
	if o.TombstoneTTL == 0 {
		o.TombstoneTTL = backend.TombstoneTTLDefault
	}
	if o.BacklogFull == "" {
		o.BacklogFull = backend.BacklogDropOldest
	}
	if o.ConsumerIdleTimeout < 0 {
		o.ConsumerIdleTimeout = -1
	}
	return o
}

// quietMs is the quiet period claim.lua and reclaim.lua take: ConsumerIdleTimeout in ms, 0
// for the lease, -1 to keep consumers.
func (o Options) quietMs() int64 {
	if o.ConsumerIdleTimeout < 0 {
		return -1
	}
	return backendkit.Millis(o.ConsumerIdleTimeout)
}

// validate checks options after WithDefaults.
func (o Options) validate() error {
	if err := backendkit.ValidatePrefix(o.Prefix); err != nil {
		return err
	}
	switch {
	case o.Format != FormatNative && o.Format != FormatWatermill:
		return &backend.ConfigError{Field: "Format", Reason: "must be " + string(FormatNative) + " or " + string(FormatWatermill)}
	case o.Retention != RetainUntilTrimmed && o.Retention != DeleteOnAck:
		return &backend.ConfigError{Field: "Retention", Reason: "must be " + string(RetainUntilTrimmed) + " or " + string(DeleteOnAck)}
	case o.MaxLen < 0:
		return &backend.ConfigError{Field: "MaxLen", Reason: "must not be negative"}
	case o.MaxAge < 0:
		return &backend.ConfigError{Field: "MaxAge", Reason: "must not be negative"}
	case o.MaxLen > 0 && o.MaxAge > 0:
		return &backend.ConfigError{Field: "MaxAge", Reason: "cannot be set together with MaxLen"}
	case o.BacklogLimit < 0:
		return &backend.ConfigError{Field: "BacklogLimit", Reason: "must not be negative"}
	case o.BacklogTTL < 0:
		return &backend.ConfigError{Field: "BacklogTTL", Reason: "must not be negative"}
	case o.TombstoneTTL < 0:
		return &backend.ConfigError{Field: "TombstoneTTL", Reason: "must not be negative"}
	}
	if err := backendkit.ValidateBacklogPolicy(o.BacklogFull); err != nil {
		return err
	}
	return backendkit.ValidateBatchSize(o.BatchSize)
}
