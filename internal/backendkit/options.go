package backendkit

import (
	"fmt"
	"time"

	"github.com/relq/relq/backend"
)

// ValidatePrefix checks Options.Prefix, which goes inside every key's hash tag, as a name. The
// error is a *backend.ConfigError for the field Prefix that also matches the name error's
// sentinel (backend.ErrInvalidName) with errors.Is.
func ValidatePrefix(prefix string) error {
	if err := backend.ValidateName("prefix", prefix); err != nil {
		return &fieldError{cfg: &backend.ConfigError{Field: "Prefix", Reason: err.Error()}, cause: err}
	}
	return nil
}

// BatchSizeMax bounds Options.BatchSize: a script passes a batch's ids to one command with
// Lua's unpack, which fails past about 8,000 values, and a script that fails half way keeps
// the writes it made.
const BatchSizeMax = 4096

// ValidateBatchSize checks Options.BatchSize after defaults: from 1 to BatchSizeMax.
func ValidateBatchSize(n int) error {
	if n < 1 || n > BatchSizeMax {
		return &backend.ConfigError{Field: "BatchSize", Reason: fmt.Sprintf("must be from 1 to %d", BatchSizeMax)}
	}
	return nil
}

// fieldError is a ConfigError caused by another error (a *backend.NameError), so errors.Is
// matches both backend.ErrInvalidConfig and the cause's sentinel.
type fieldError struct {
	cfg   *backend.ConfigError
	cause error
}

func (e *fieldError) Error() string   { return e.cfg.Error() }
func (e *fieldError) Unwrap() []error { return []error{e.cfg, e.cause} }

// IdleProbe is how often an idle consumer runs its backend's claim script at the start of a
// Claim; in between, its Claims go straight to the blocking wait, which whatever becomes
// claimable wakes (internal/engine's Idle for list and zset, streams' own for its positions).
// The wait cannot see a group vanish without a restart (FLUSHALL, a DEL by another client),
// so the probe also bounds how late a subscription learns it and registers the group again.
const IdleProbe = time.Second
