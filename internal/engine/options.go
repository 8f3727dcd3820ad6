package engine

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Defaults of Options.
const (
	// PrefixDefault starts every key of the backend.
	PrefixDefault = "relq"
	// BatchSizeDefault bounds the ids one script call handles.
	BatchSizeDefault = 1000
)

// Options configure a list or zset Backend (list.Options and zset.Options are this type).
type Options struct {
	// Prefix starts every key, inside the hash tag {prefix:topic}: it namespaces relq's keys
	// and lets ACL rules like `~{relq:*` cover them. Defaults to PrefixDefault ("relq").
	Prefix string
	// BatchSize bounds how many ids one script call handles: messages per claim, acks, nacks
	// and extensions per call (larger batches take several), delayed messages promoted per
	// claim, leases checked per Reclaim without a Count, dead letters requeued or purged per
	// round trip, dead letters per page. It keeps each script short, since a script blocks
	// Redis while it runs. At most backendkit.BatchSizeMax (4096). Defaults to
	// BatchSizeDefault (1000).
	BatchSize int
	// BacklogLimit bounds a topic's backlog: the messages published while the topic has no
	// group, kept for the first group that registers (pubsub's backlog rule). A publish beyond
	// it drops the oldest, those the first group would have received first, or is refused
	// (BacklogFull). Defaults to backend.BacklogLimitDefault (10,000); negative is invalid.
	BacklogLimit int
	// BacklogFull is what a publish the full backlog cannot hold does:
	// backend.BacklogDropOldest (the default) or backend.BacklogRefuse.
	BacklogFull backend.BacklogPolicy
	// BacklogTTL is how long a backlog, and its topic's keys, live after the last publish while
	// no group registers; then Redis deletes them (a topic created again issues delivery IDs
	// above the old ones). Defaults to backend.BacklogTTLDefault (24h); negative is invalid.
	BacklogTTL time.Duration
	// TombstoneTTL is how long a group deleted through the Admin API (DeleteGroup,
	// DeleteTopic: the CLI, the dashboard) stays marked deleted: its running subscriptions
	// that find it unregistered within that time stop with backend.ErrGroupDeleted, where
	// finding no mark makes them register it again (its state vanished; see
	// backend.TombstoneTTLDefault). Give every process of a deployment the same value.
	// Defaults to backend.TombstoneTTLDefault (24h); negative is invalid.
	TombstoneTTL time.Duration
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = PrefixDefault
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
	return o
}

// validate checks options after WithDefaults.
func (o Options) validate() error {
	if err := backendkit.ValidatePrefix(o.Prefix); err != nil {
		return err
	}
	if o.BacklogLimit < 0 {
		return &backend.ConfigError{Field: "BacklogLimit", Reason: "must not be negative"}
	}
	if o.BacklogTTL < 0 {
		return &backend.ConfigError{Field: "BacklogTTL", Reason: "must not be negative"}
	}
	if err := backendkit.ValidateBacklogPolicy(o.BacklogFull); err != nil {
		return err
	}
	if o.TombstoneTTL < 0 {
		return &backend.ConfigError{Field: "TombstoneTTL", Reason: "must not be negative"}
	}
	return backendkit.ValidateBatchSize(o.BatchSize)
}

// Open returns the engine of store on client with opts (defaults applied and checked), for a
// backend's New. The Redis version (>= 6.2) is checked on first use, so Open needs no round
// trip and works while Redis is still starting.
func Open(client redis.UniversalClient, opts Options, store Store) (*Engine, error) {
	if client == nil {
		return nil, &backend.ConfigError{Field: "client", Reason: "must not be nil"}
	}
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	store.BatchSize = opts.BatchSize
	e := New(client, opts.Prefix, store)
	e.backlogLimit, e.backlogTTL, e.tombstoneTTL = opts.BacklogLimit, opts.BacklogTTL, opts.TombstoneTTL
	e.backlogRefuse = opts.BacklogFull == backend.BacklogRefuse
	return e, nil
}
