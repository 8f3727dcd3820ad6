package engine

import (
	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
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
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = PrefixDefault
	}
	if o.BatchSize == 0 {
		o.BatchSize = BatchSizeDefault
	}
	return o
}

// validate checks options after WithDefaults.
func (o Options) validate() error {
	if err := backendkit.ValidatePrefix(o.Prefix); err != nil {
		return err
	}
	return backendkit.ValidateBatchSize(o.BatchSize)
}

// Open returns the engine of store on client with opts (defaults applied and checked), for a
// backend's New. The Redis version (>= 6.2) is checked on first use, so Open needs no round
// trip and works while Redis is still starting.
func Open(client redis.UniversalClient, opts Options, store Store) (*Engine, error) {
	if client == nil {
		return nil, &pubsub.ConfigError{Field: "client", Reason: "must not be nil"}
	}
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	store.BatchSize = opts.BatchSize
	return New(client, opts.Prefix, store), nil
}
