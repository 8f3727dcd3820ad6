package backend

import "time"

// Defaults of Options.
const (
	// PrefixDefault starts every key of the
	PrefixDefault = "relq"
	// BatchSizeDefault bounds the ids one script call handles.
	BatchSizeDefault = 1000
)

// Options configure the list and zset backends (list.Options and zset.Options are this type;
// streams.Options has these fields and its own). Each field says what its zero value means.
type Options struct {
	// Prefix starts every key, inside the hash tag {prefix:topic}: it namespaces relq's keys
	// and lets ACL rules like `~{relq:*` cover them. Defaults to PrefixDefault ("relq").
	Prefix string
	// BatchSize bounds how many ids one script call handles: messages per claim, acks, nacks
	// and extensions per call (larger batches take several), delayed messages promoted per
	// claim, leases checked per Reclaim without a Count, dead letters requeued or purged per
	// round trip, dead letters per page. It keeps each script short, since a script blocks
	// Redis while it runs. At most 4096. Defaults to
	// BatchSizeDefault (1000).
	BatchSize int
	// BacklogLimit bounds a topic's backlog: the messages published while the topic has no
	// group, kept for the first group that registers (the backlog rule, lifecycle.go). A publish beyond
	// it drops the oldest, those the first group would have received first, or is refused
	// (BacklogFull). Defaults to BacklogLimitDefault (10,000); negative is invalid.
	BacklogLimit int
	// BacklogFull is what a publish the full backlog cannot hold does:
	// BacklogDropOldest (the default) or BacklogRefuse.
	BacklogFull BacklogPolicy
	// BacklogTTL is how long a backlog, and its topic's keys, live after the last publish while
	// no group registers; then Redis deletes them (a topic created again issues delivery IDs
	// above the old ones). Defaults to BacklogTTLDefault (24h); negative is invalid.
	BacklogTTL time.Duration
	// TombstoneTTL is how long a group deleted through the Admin API (DeleteGroup,
	// DeleteTopic: the CLI, the dashboard) stays marked deleted: its running subscriptions
	// that find it unregistered within that time stop with ErrGroupDeleted, where
	// finding no mark makes them register it again (its state vanished; see
	// TombstoneTTLDefault). Give every process of a deployment the same value.
	// Defaults to TombstoneTTLDefault (24h); negative is invalid.
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
		o.BacklogLimit = BacklogLimitDefault
	}
	if o.BacklogTTL == 0 {
		o.BacklogTTL = BacklogTTLDefault
	}
	if o.TombstoneTTL == 0 {
		o.TombstoneTTL = TombstoneTTLDefault
	}
	if o.BacklogFull == "" {
		o.BacklogFull = BacklogDropOldest
	}
	return o
}
