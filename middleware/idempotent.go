package middleware

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// Defaults of IdempotentConfig.
const (
	IdempotentPrefixDefault = "relq"
	InProgressTTLDefault    = time.Minute
	DoneTTLDefault          = 24 * time.Hour
)

// markerWriteTimeout bounds recording a run's end (done or released). It does not follow the
// message's context: a handler that finishes while its subscriber closes still counts.
const markerWriteTimeout = 5 * time.Second

// Marker values: "p:<token>" while a run holds the key, "d:<token>" once a run succeeded.
const (
	inProgressPrefix = "p:"
	donePrefix       = "d:"
)

var (
	//go:embed lua/idempotent_acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(acquireLua)
	//go:embed lua/idempotent_release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)
)

// IdempotentConfig configures Idempotent.
type IdempotentConfig struct {
	// Client is the Redis that keeps the markers; any redis.UniversalClient (single node,
	// Cluster, failover). Required. It may be the queue's Redis or another one.
	Client redis.UniversalClient
	// Key returns a message's idempotency key: two messages with one key are handled once.
	// Defaults to UUIDKey (the Watermill UUID, which a producer that retries a publish keeps,
	// so a duplicate publish is caught too). A key error fails the delivery (it is nacked).
	Key func(*message.Message) (string, error)
	// Prefix starts every marker key, which is "{<Prefix>:idem:<handler>:<key>}" (see
	// MarkerKey). Defaults to IdempotentPrefixDefault ("relq"), so that the ACL rule of the
	// backends' keys, ~{relq:*, covers the markers too. Prefix follows the rules of backend
	// prefixes (backend.ValidateName).
	Prefix string
	// InProgressTTL is how long a run holds its marker. It must exceed the longest run of the
	// handler, including in-process retries: after it, a duplicate delivery may run while the
	// first run still works. It is also how long a crashed run blocks the message's
	// redelivery. Defaults to InProgressTTLDefault (1m).
	InProgressTTL time.Duration
	// DoneTTL is how long a handled message's marker is kept, and so the window in which a
	// duplicate is recognised. Defaults to DoneTTLDefault (24h).
	DoneTTL time.Duration
	// Logger receives failures to record a run's end, which are not returned (the handler's
	// work is done by then). Defaults to discarding them.
	Logger watermill.LoggerAdapter
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c IdempotentConfig) WithDefaults() IdempotentConfig {
	if c.Key == nil {
		c.Key = UUIDKey
	}
	if c.Prefix == "" {
		c.Prefix = IdempotentPrefixDefault
	}
	if c.InProgressTTL == 0 {
		c.InProgressTTL = InProgressTTLDefault
	}
	if c.DoneTTL == 0 {
		c.DoneTTL = DoneTTLDefault
	}
	if c.Logger == nil {
		c.Logger = watermill.NopLogger{}
	}
	return c
}

// validate checks a config after WithDefaults.
func (c IdempotentConfig) validate() error {
	if c.Client == nil {
		return configError("IdempotentConfig.Client", "is required")
	}
	if err := backend.ValidateName("prefix", c.Prefix); err != nil {
		return configError("IdempotentConfig.Prefix", err.Error())
	}
	switch {
	case c.InProgressTTL < time.Millisecond:
		return configError("IdempotentConfig.InProgressTTL", "must be at least 1ms")
	case c.DoneTTL < time.Millisecond:
		return configError("IdempotentConfig.DoneTTL", "must be at least 1ms")
	}
	return nil
}

// handlerEscaper makes handler names free of ':', so that the first ':' after the handler in
// a marker key ends it and two (handler, key) pairs never share a marker.
var handlerEscaper = strings.NewReplacer("%", "%25", ":", "%3A")

// MarkerKey returns the Redis key of the marker of key under handler (the router handler's
// name): "{<Prefix>:idem:<handler>:<key>}", with ':' and '%' in the handler name escaped.
// Markers are per handler, so two handlers (or services) that consume the same message each
// handle it once. The whole key is the hash tag, so markers spread over Cluster slots; every
// script touches that one key. Delete a marker to make a message run again.
func (c IdempotentConfig) MarkerKey(handler, key string) string {
	prefix := c.Prefix
	if prefix == "" {
		prefix = IdempotentPrefixDefault
	}
	return "{" + prefix + ":idem:" + handlerEscaper.Replace(handler) + ":" + key + "}"
}

// UUIDKey is the default idempotency key: the message's Watermill UUID.
func UUIDKey(msg *message.Message) (string, error) {
	if msg.UUID == "" {
		return "", errors.New("message has no UUID")
	}
	return msg.UUID, nil
}

// DeliveryKey keys a message by its relq topic and delivery ID, which never repeat: it
// catches redeliveries only, not a message published twice, and suits producers whose UUIDs
// are not stable across publish retries.
func DeliveryKey(msg *message.Message) (string, error) {
	topic, id := msg.Metadata.Get(pubsub.MetadataTopic), pubsub.DeliveryID(msg)
	if topic == "" || id == "" {
		return "", errors.New("message has no relq delivery metadata")
	}
	return topic + ":" + id, nil
}

// ErrInProgress reports that another run holds a message's marker. Use errors.Is; the error
// is an *InProgressError.
var ErrInProgress = errors.New("relq: message is being handled by another run")

// InProgressError says which marker is held and for how long yet. It matches ErrInProgress
// and implements RetryAfter, so Backoff redelivers the message no sooner than the marker
// expires.
type InProgressError struct {
	Key       string
	Remaining time.Duration
}

// Error describes the failure for logs and users.
func (e *InProgressError) Error() string {
	return fmt.Sprintf("relq: message is being handled by another run (marker %s, expires in %v)", e.Key, e.Remaining)
}

// Is makes errors.Is(err, ErrInProgress) true.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// RetryAfter returns how long the marker is held yet.
func (e *InProgressError) RetryAfter() time.Duration { return e.Remaining }

type skippedKey struct{}

// Skipped reports whether Idempotent acked msg without running the handler because it was
// already handled. Outer middleware (Metrics, logging) can read it after the handler returns.
func Skipped(msg *message.Message) bool {
	v, _ := msg.Context().Value(skippedKey{}).(bool)
	return v
}

// Idempotent returns middleware that lets a handler succeed at most once per idempotency
// key within DoneTTL, using one Redis marker per key and handler (see MarkerKey).
//
// Before the handler runs, one script takes the marker, in progress, for InProgressTTL with
// a random token:
//
//   - marker free: the handler runs. On success the marker becomes done for DoneTTL. On
//     failure (an error or a panic) it is deleted, only if this run still holds it (compare
//     and delete in one script), so the retry runs the handler again.
//   - marker done: the message was handled; the handler does not run, the middleware
//     returns no error and the message is acked.
//   - marker in progress (another run has it, or a run crashed holding it): the handler does
//     not run and the middleware returns an *InProgressError, after setting the nack delay
//     to the marker's remaining TTL, so the message comes back once the other run finished
//     (it is then acked as done) or its marker expired (it then runs). That nack counts as
//     a delivery attempt towards the subscriber's MaxDeliveries, usually just one.
//
// A handler that returns messages for the router to publish is marked done only once the
// router acked the message, that is after it published them (a failed publish nacks the
// message and releases the marker, so the retry produces them again); a goroutine waits for
// the ack for at most InProgressTTL.
//
// The guarantee is effectively-once handling of at-least-once deliveries, within limits:
// a duplicate after DoneTTL runs again; a crash after the handler's side effects and before
// the done marker was written runs it again, as does losing the marker in Redis (failover to
// a replica that had not received it, a restart without persistence). Side effects that
// the crash leaves half-applied are not undone. See docs/idempotency.md.
//
// If Redis cannot be reached to take the marker, the delivery fails (fail closed); if the
// end of a run cannot be recorded, the outcome stands and the failure is logged.
func Idempotent(cfg IdempotentConfig) (message.HandlerMiddleware, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			key, err := cfg.Key(msg)
			if err == nil && key == "" {
				err = errors.New("empty key")
			}
			if err != nil {
				return nil, fmt.Errorf("relq: idempotency key of message %s: %w", msg.UUID, err)
			}
			r := &run{cfg: &cfg, msg: msg,
				key:   cfg.MarkerKey(message.HandlerNameFromCtx(msg.Context()), key),
				token: uuid.NewString()}
			handled, err := r.acquire()
			if err != nil {
				return nil, err
			}
			if handled {
				msg.SetContext(context.WithValue(msg.Context(), skippedKey{}, true))
				return nil, nil
			}
			finished := false
			defer func() {
				if !finished { // a panic (or runtime.Goexit) in the handler
					r.release()
				}
			}()
			produced, err := h(msg)
			finished = true
			switch {
			case err != nil:
				r.release()
			case len(produced) == 0:
				r.markDone()
			default:
				go r.settleOnAck()
			}
			return produced, err
		}
	}, nil
}

// run is one handler run under a marker.
type run struct {
	cfg   *IdempotentConfig
	msg   *message.Message
	key   string
	token string
}

// acquire takes the marker. It returns handled when a done marker says the message was
// handled already, and an *InProgressError when another run holds the marker.
func (r *run) acquire() (handled bool, err error) {
	ttl := strconv.FormatInt(r.cfg.InProgressTTL.Milliseconds(), 10)
	res, err := acquireScript.Run(r.msg.Context(), r.cfg.Client, []string{r.key}, inProgressPrefix+r.token, ttl).Slice()
	if err != nil {
		return false, fmt.Errorf("relq: taking idempotency marker %s: %w", r.key, err)
	}
	if len(res) == 1 {
		return false, nil
	}
	value, _ := res[1].(string)
	if strings.HasPrefix(value, donePrefix) {
		return true, nil
	}
	pttl, _ := res[2].(int64)
	remaining := time.Duration(max(pttl, 0)) * time.Millisecond
	pubsub.SetNackDelay(r.msg, remaining)
	return false, &InProgressError{Key: r.key, Remaining: remaining}
}

// markDone turns the marker done. It does not check that this run still holds it: the work
// is done, whoever took the marker over since.
func (r *run) markDone() {
	ctx, cancel := r.writeContext()
	defer cancel()
	if err := r.cfg.Client.Set(ctx, r.key, donePrefix+r.token, r.cfg.DoneTTL).Err(); err != nil {
		r.cfg.Logger.Error("relq: could not mark a handled message done; a duplicate would run again",
			err, watermill.LogFields{"message_uuid": r.msg.UUID, "marker": r.key})
	}
}

// release deletes the marker if this run still holds it, so a retry runs the handler.
func (r *run) release() {
	ctx, cancel := r.writeContext()
	defer cancel()
	if err := releaseScript.Run(ctx, r.cfg.Client, []string{r.key}, inProgressPrefix+r.token).Err(); err != nil {
		r.cfg.Logger.Error("relq: could not release an idempotency marker; the retry waits for it to expire",
			err, watermill.LogFields{"message_uuid": r.msg.UUID, "marker": r.key})
	}
}

// settleOnAck marks the message done once the router acks it, or releases the marker when
// it nacks it. Past InProgressTTL the marker has expired and there is nothing left to do.
func (r *run) settleOnAck() {
	timer := time.NewTimer(r.cfg.InProgressTTL)
	defer timer.Stop()
	select {
	case <-r.msg.Acked():
		r.markDone()
	case <-r.msg.Nacked():
		r.release()
	case <-timer.C:
	}
}

func (r *run) writeContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.msg.Context()), markerWriteTimeout)
}
