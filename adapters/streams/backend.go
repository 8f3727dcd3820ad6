package streams

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Backend is the streams backend of backend.Backend. It is safe for concurrent use.
type Backend struct {
	client redis.UniversalClient
	opts   Options
	codec  codec
	// version checks Redis is at least 6.2 on first use: XAUTOCLAIM's generation (XPENDING ...
	// IDLE, XTRIM MINID, exclusive XRANGE and XPENDING ranges).
	version backendkit.VersionGate
	// idle is what Claim knows of consumers whose last claim found nothing.
	idle idleConsumers
	// waits runs the XREADs of blocking claims on connections of their own.
	waits *backendkit.Waits
	// lanes are the publish lanes, which let a resent publish append nothing twice.
	lanes *backendkit.Lanes
}

var (
	_ backend.Backend   = (*Backend)(nil)
	_ backend.Admin     = (*Backend)(nil)
	_ backend.Ephemeral = (*Backend)(nil)
)

// New returns a streams Backend on client. The Redis version (>= 6.2) is checked on first
// use, so New needs no round trip and works while Redis is still starting.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	if client == nil {
		return nil, &backend.ConfigError{Field: "client", Reason: "must not be nil"}
	}
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Backend{client: client, opts: opts, codec: codec{format: opts.Format}, waits: backendkit.NewWaits(client),
		lanes: backendkit.NewLanes()}, nil
}

// Close closes the connections the backend opened for its blocking claims, ending the claims
// blocked on them; those and every later Claim that would block fail with an error wrapping
// backend.ErrClosed. Everything else keeps working on the client the backend was given, which
// Close does not close. Idle wait connections close by themselves after
// 10 s; Close releases the rest at once. Close after the Subscribers.
func (b *Backend) Close() error { return b.waits.Close() }

// Name returns "streams".
func (b *Backend) Name() string { return "streams" }

// Capabilities: FIFO with one consumer; new groups can replay the retained stream; delays
// are kept on the Redis clock and a blocked claim wakes for the earliest due time (a Go
// timer, since Redis fires blocking timeouts only on its server tick), and due retries are
// claimed by (due time, entry ID), so delays are on time and in due order; no priorities;
// no orphans, since XREADGROUP moves an entry to the PEL and the consumer in one command.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{FIFO: true, NewGroupReplay: true, OnTimeDelay: true, DueOrder: true}
}

// check validates names (as *backend.NameError) and the Redis version before a call.
// Pairs are kind, name: "topic", p.Topic, "group", p.Group, ... A consumer may not take the
// parking consumer's name.
func (b *Backend) check(ctx context.Context, pairs ...string) error {
	if err := backendkit.ValidateNames(pairs...); err != nil {
		return err
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == "consumer" && pairs[i+1] == ParkedConsumer {
			return &backend.NameError{Kind: "consumer", Name: ParkedConsumer, Reason: "reserved by the streams backend for parked deliveries"}
		}
	}
	return b.version.Check(ctx, b.client)
}

// deleteOnAck is the flag the scripts take for Options.Retention.
func (b *Backend) deleteOnAck() string {
	if b.opts.Retention == DeleteOnAck {
		return "1"
	}
	return "0"
}

// toStrings reads a reply of strings (a flat field/value list).
func toStrings(v any) []string {
	flat, _ := v.([]any)
	out := make([]string, len(flat))
	for i, s := range flat {
		out[i], _ = s.(string)
	}
	return out
}

// isNoSuchKey reports Redis's error for a stream command on a key that does not exist.
func isNoSuchKey(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(rerr.Error(), "no such key")
}
