package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/pubsub"
)

// Backend is the streams backend of pubsub.Backend. It is safe for concurrent use.
type Backend struct {
	client redis.UniversalClient
	opts   Options
	codec  codec

	versionOK  atomic.Bool
	versionMu  sync.Mutex
	versionErr error
}

var _ pubsub.Backend = (*Backend)(nil)

// New returns a streams Backend on client. The Redis version (>= 6.2) is checked on first
// use, so New needs no round trip and works while Redis is still starting.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	if client == nil {
		return nil, &pubsub.ConfigError{Field: "client", Reason: "must not be nil"}
	}
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Backend{client: client, opts: opts, codec: codec{format: opts.Format}}, nil
}

// Name returns "streams".
func (b *Backend) Name() string { return "streams" }

// Capabilities: FIFO with one consumer; new groups can replay the retained stream; delays
// are kept on the Redis clock and a blocked claim wakes for the earliest due time (a Go
// timer, since Redis fires blocking timeouts only on its server tick), and due retries are
// claimed by (due time, entry ID), so delays are on time and in due order; no priorities;
// no orphans, since XREADGROUP moves an entry to the PEL and the consumer in one command.
func (b *Backend) Capabilities() pubsub.Capabilities {
	return pubsub.Capabilities{FIFO: true, NewGroupReplay: true, OnTimeDelay: true, DueOrder: true}
}

// ready checks once per Backend that Redis is at least 6.2 (XAUTOCLAIM's generation:
// XPENDING ... IDLE, XTRIM MINID, exclusive XRANGE). A connection error is returned and the
// check runs again next time; a server that refuses INFO (ACLs, proxies) is assumed recent
// enough, and scripts then fail loudly if it is not.
func (b *Backend) ready(ctx context.Context) error {
	if b.versionOK.Load() {
		return nil
	}
	b.versionMu.Lock()
	defer b.versionMu.Unlock()
	if b.versionOK.Load() {
		return nil
	}
	if b.versionErr != nil {
		return b.versionErr
	}
	info, err := b.client.Info(ctx, "server").Result()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr):
		b.versionOK.Store(true)
		return nil
	case err != nil:
		return err
	}
	major, minor, ok := redisVersion(info)
	if ok && (major < 6 || major == 6 && minor < 2) {
		b.versionErr = fmt.Errorf("%w: server is %d.%d, relq needs 6.2 or later", pubsub.ErrRedisVersion, major, minor)
		return b.versionErr
	}
	b.versionOK.Store(true)
	return nil
}

// redisVersion reads major and minor from INFO server's redis_version line.
func redisVersion(info string) (major, minor int, ok bool) {
	for line := range strings.Lines(info) {
		v, found := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !found {
			continue
		}
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return 0, 0, false
		}
		var err1, err2 error
		major, err1 = strconv.Atoi(parts[0])
		minor, err2 = strconv.Atoi(parts[1])
		return major, minor, err1 == nil && err2 == nil
	}
	return 0, 0, false
}

// check validates names (as *pubsub.NameError) and the Redis version before a call.
// Pairs are kind, name: "topic", p.Topic, "group", p.Group, ... A consumer may not take the
// parking consumer's name.
func (b *Backend) check(ctx context.Context, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := pubsub.ValidateName(pairs[i], pairs[i+1]); err != nil {
			return err
		}
		if pairs[i] == "consumer" && pairs[i+1] == ParkedConsumer {
			return &pubsub.NameError{Kind: "consumer", Name: ParkedConsumer, Reason: "reserved by the streams backend for parked deliveries"}
		}
	}
	return b.ready(ctx)
}

// deleteOnAck is the flag the scripts take for Options.Retention.
func (b *Backend) deleteOnAck() string {
	if b.opts.Retention == DeleteOnAck {
		return "1"
	}
	return "0"
}

// ms converts a duration to whole milliseconds for a script, rounding up so that a positive
// duration never becomes zero.
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// heldArgs flattens fencing tokens into ARGV after head.
func heldArgs(head []any, items []pubsub.Held) []any {
	args := append(make([]any, 0, len(head)+2*len(items)), head...)
	for _, it := range items {
		args = append(args, it.ID, it.Attempt)
	}
	return args
}

// toInt reads an integer reply element.
func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}

// toInts reads a reply of integers.
func toInts(res []any, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(res))
	for i, v := range res {
		out[i] = toInt(v)
	}
	return out, nil
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
