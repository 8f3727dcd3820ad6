package backendkit

import "github.com/relq/relq/pubsub"

// ValidatePrefix checks Options.Prefix, which goes inside every key's hash tag, as a name. The
// error is a *pubsub.ConfigError for the field Prefix that also matches the name error's
// sentinel (pubsub.ErrInvalidName) with errors.Is.
func ValidatePrefix(prefix string) error {
	if err := pubsub.ValidateName("prefix", prefix); err != nil {
		return &fieldError{cfg: &pubsub.ConfigError{Field: "Prefix", Reason: err.Error()}, cause: err}
	}
	return nil
}

// ValidateBatchSize checks Options.BatchSize after defaults: at least 1.
func ValidateBatchSize(n int) error {
	if n < 1 {
		return &pubsub.ConfigError{Field: "BatchSize", Reason: "must be at least 1"}
	}
	return nil
}

// fieldError is a ConfigError caused by another error (a *pubsub.NameError), so errors.Is
// matches both pubsub.ErrInvalidConfig and the cause's sentinel.
type fieldError struct {
	cfg   *pubsub.ConfigError
	cause error
}

func (e *fieldError) Error() string   { return e.cfg.Error() }
func (e *fieldError) Unwrap() []error { return []error{e.cfg, e.cause} }
