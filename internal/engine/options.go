package engine

import (
	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// validate checks options after WithDefaults.
func validate(o backend.Options) error {
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
func Open(client redis.UniversalClient, opts backend.Options, store Store) (*Engine, error) {
	if client == nil {
		return nil, &backend.ConfigError{Field: "client", Reason: "must not be nil"}
	}
	opts = opts.WithDefaults()
	if err := validate(opts); err != nil {
		return nil, err
	}
	store.BatchSize = opts.BatchSize
	e := New(client, opts.Prefix, store)
	e.backlogLimit, e.backlogTTL, e.tombstoneTTL = opts.BacklogLimit, opts.BacklogTTL, opts.TombstoneTTL
	e.backlogRefuse = opts.BacklogFull == backend.BacklogRefuse
	return e, nil
}
