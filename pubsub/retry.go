package pubsub

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// retrier paces the retries of one loop (claim, ack, heartbeat, ...) while Redis fails, with
// capped exponential backoff, and logs once per state change: when errors start and when the
// loop recovers. A loop that logged every failed attempt would flood the log during an outage.
type retrier struct {
	what   string
	min    time.Duration
	max    time.Duration
	logger watermill.LoggerAdapter

	failing bool
	next    time.Duration
}

func newRetrier(what string, c SubscriberConfig, logger watermill.LoggerAdapter) *retrier {
	return &retrier{what: what, min: c.RetryMin, max: c.RetryMax, logger: logger}
}

// failed records a failed attempt and returns how long to wait before the next one.
func (r *retrier) failed(err error) time.Duration {
	if !r.failing {
		r.failing = true
		r.next = r.min
		r.logger.Error("relq: "+r.what+" failing, retrying with backoff until it succeeds", err, nil)
	} else {
		r.next = min(r.next*2, r.max)
	}
	return jitter(r.next, 0.2)
}

// ok records a successful attempt.
func (r *retrier) ok() {
	if r.failing {
		r.failing = false
		r.logger.Info("relq: "+r.what+" recovered", nil)
	}
}

// jitter spreads d by ±frac, so that many consumers that failed together do not retry (or
// reclaim) in lockstep.
func jitter(d time.Duration, frac float64) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 - frac + 2*frac*rand.Float64()))
}

// sleep waits d, or less when done is closed first, and reports whether d elapsed.
func sleep(d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// permanent reports errors that retrying cannot fix: relq's own sentinel errors (a bad name,
// an old Redis, a missing feature, a group deleted or durable where an ephemeral one was
// asked for) and cancellation. Anything else is taken for a Redis or
// network failure, which a later attempt may get past (Backend's contract).
func permanent(err error) bool {
	for _, target := range []error{
		backend.ErrInvalidName, backend.ErrRedisVersion, backend.ErrNotImplemented, backend.ErrInvalidConfig,
		backend.ErrReservedMetadata, backend.ErrMessageTooLarge, backend.ErrDelayTooLong, backend.ErrNilMessage, backend.ErrClosed, backend.ErrStorageLayout,
		backend.ErrGroupDeleted, backend.ErrNotEphemeral,
		context.Canceled, context.DeadlineExceeded,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// clientTimeout reports a call that the Redis client stopped waiting for (ReadTimeout or
// WriteTimeout): it may still have run in Redis, and it may have been too large to finish in
// time. A dial that timed out is not one: no call was sent.
func clientTimeout(err error) bool {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}
