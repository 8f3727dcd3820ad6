package middleware

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/relq/relq/pubsub"
)

// Defaults of BackoffConfig.
const (
	BackoffInitialDefault    = time.Second
	BackoffMultiplierDefault = 2.0
	BackoffMaxDefault        = 5 * time.Minute
	BackoffJitterDefault     = 0.2
)

// BackoffConfig configures Backoff. The delay after the nth delivery of a message is
// Initial·Multiplierⁿ⁻¹, capped at Max, then shortened by up to Jitter of itself.
type BackoffConfig struct {
	// Initial is the delay after the first delivery fails. Defaults to BackoffInitialDefault
	// (1s). Redis keeps delays in milliseconds, so sub-millisecond parts are dropped.
	Initial time.Duration
	// Multiplier scales the delay from one attempt to the next; at least 1.
	// Defaults to BackoffMultiplierDefault (2).
	Multiplier float64
	// Max caps the delay, before jitter; at most pubsub.MaxDelay. Defaults to
	// BackoffMaxDefault (5m).
	Max time.Duration
	// Jitter is the largest fraction taken off a delay at random, so that messages that
	// failed together (a dependency was down) do not all come back in the same millisecond.
	// Jitter only shortens, so the delay never exceeds Max and, with Jitter at most 0.5 and
	// Multiplier at least 2, never shrinks from one attempt to the next.
	// Defaults to BackoffJitterDefault (0.2); a negative value turns jitter off.
	Jitter float64
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c BackoffConfig) WithDefaults() BackoffConfig {
	if c.Initial == 0 {
		c.Initial = BackoffInitialDefault
	}
	if c.Multiplier == 0 {
		c.Multiplier = BackoffMultiplierDefault
	}
	if c.Max == 0 {
		c.Max = BackoffMaxDefault
	}
	if c.Jitter == 0 {
		c.Jitter = BackoffJitterDefault
	} else if c.Jitter < 0 {
		c.Jitter = 0
	}
	return c
}

// validate checks a config after WithDefaults.
func (c BackoffConfig) validate() error {
	switch {
	case c.Initial < time.Millisecond:
		return configError("BackoffConfig.Initial", "must be at least 1ms")
	case c.Multiplier < 1 || math.IsInf(c.Multiplier, 0) || math.IsNaN(c.Multiplier):
		return configError("BackoffConfig.Multiplier", "must be a finite number of at least 1")
	case c.Max < c.Initial:
		return configError("BackoffConfig.Max", "must be at least Initial")
	case c.Max > pubsub.MaxDelay:
		return configError("BackoffConfig.Max", "must be at most pubsub.MaxDelay (a longer nack delay dead-letters the message)")
	case c.Jitter > 1 || math.IsNaN(c.Jitter):
		return configError("BackoffConfig.Jitter", "must be at most 1")
	}
	return nil
}

// Delay returns the redelivery delay after delivery number attempt (1 on the first)
// fails, with zero fields taken as their defaults and a random jitter.
func (c BackoffConfig) Delay(attempt int) time.Duration {
	return c.WithDefaults().delay(attempt, rand.Float64())
}

// delay computes the delay of attempt with r, in [0, 1), as the random draw.
func (c BackoffConfig) delay(attempt int, r float64) time.Duration {
	attempt = max(attempt, 1)
	d := float64(c.Initial) * math.Pow(c.Multiplier, float64(attempt-1))
	if d > float64(c.Max) || math.IsInf(d, 0) {
		d = float64(c.Max)
	}
	return time.Duration(d * (1 - c.Jitter*r))
}

// RetryAfter is implemented by errors that know the earliest time a retry can succeed,
// such as *InProgressError. Backoff never delays a redelivery less than what an error in
// the chain asks for.
type RetryAfter interface {
	error
	RetryAfter() time.Duration
}

// RetryError is the error Backoff returns for a failed delivery: the handler's error with
// the attempt, the delay the message was nacked with and when it is due. It unwraps to the
// handler's error.
type RetryError struct {
	Err     error
	Attempt int
	Delay   time.Duration
	// Due is when the redelivery is due, on the local clock: Delay after the handler failed.
	// The delay runs from when the nack reaches Redis, a round trip or a coalesced ack
	// batch later, so the message comes back at Due or a few milliseconds after it, while
	// its group's consumers wait idle as when they are busy. Zero on the final attempt.
	Due time.Time
	// Final reports that Attempt reached the MaxDeliveries of the subscriber that delivered
	// the message (pubsub.MaxDeliveriesOf): the subscriber dead-letters the message instead of
	// redelivering it.
	Final bool
}

// Error describes the failure for logs and users.
func (e *RetryError) Error() string {
	if e.Final {
		return fmt.Sprintf("%v (relq: final attempt %d)", e.Err, e.Attempt)
	}
	if e.Due.IsZero() {
		return fmt.Sprintf("%v (relq: attempt %d, redelivery in %v)", e.Err, e.Attempt, e.Delay)
	}
	return fmt.Sprintf("%v (relq: attempt %d, redelivery in %v, due at %s)", e.Err, e.Attempt, e.Delay,
		e.Due.Format(dueFormat))
}

// dueFormat is how RetryError shows its due time: a log line carries the date already.
const dueFormat = "15:04:05.000"

// Unwrap returns the handler's error.
func (e *RetryError) Unwrap() error { return e.Err }

// IsFinalAttempt reports whether err comes from Backoff on a message's last delivery, the one
// whose attempt reached its subscriber's MaxDeliveries: the filter for Watermill's
// PoisonQueueWithFilter, so that only messages out of attempts go to the poison topic. The
// limit is the subscriber's own, which the message carries (pubsub.MaxDeliveriesOf), so there
// is no second setting to keep equal to it.
func IsFinalAttempt(err error) bool {
	var re *RetryError
	return errors.As(err, &re) && re.Final
}

// Backoff returns middleware that schedules a failed message's retry in Redis: on a handler
// error it sets the message's nack delay (pubsub.SetNackDelay) from its delivery attempt
// (pubsub.Attempt) and returns a *RetryError, so the router nacks the message and the
// subscriber puts it back with that delay. The retry waits in Redis rather than in the
// handler: it survives restarts, frees the handler for other messages, and after the
// subscriber's MaxDeliveries the message moves to the dead-letter store, with the handler's
// error as its reason (pubsub.SetNackReason).
//
// An error in the chain that implements RetryAfter lengthens the delay to what it asks.
// A handler that succeeds is left alone. A panic passes through untouched (the subscriber's
// own NackBackoff then applies): put Watermill's Recoverer inside Backoff to back panics
// off too. Order with Retry and PoisonQueue: see the package documentation.
func Backoff(cfg BackoffConfig) (message.HandlerMiddleware, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			if err == nil {
				return produced, nil
			}
			attempt := max(pubsub.Attempt(msg), 1)
			d := cfg.delay(attempt, rand.Float64())
			var ra RetryAfter
			if errors.As(err, &ra) {
				d = max(d, ra.RetryAfter())
			}
			d = d.Truncate(time.Millisecond) // what Redis keeps, so RetryError says what happens
			pubsub.SetNackDelay(msg, d)
			pubsub.SetNackReason(msg, err.Error())
			limit, _ := pubsub.MaxDeliveriesOf(msg)
			final := limit > 0 && attempt >= limit
			re := &RetryError{Err: err, Attempt: attempt, Delay: d, Final: final}
			if !final {
				re.Due = time.Now().Add(d)
			}
			return produced, re
		}
	}, nil
}

// configError reports an invalid config field, as the pubsub configs do.
func configError(field, reason string) error {
	return &pubsub.ConfigError{Field: field, Reason: reason}
}
