package partition

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/internal/keys"
)

// ErrCountMismatch is matched by a *CountError.
var ErrCountMismatch = errors.New("relq: partition count differs from the topic's")

// CountError reports a process configured with another partition count than the one the topic
// was created with. Nothing was written: a topic is never split two ways.
type CountError struct {
	Topic      string
	Configured int
	Recorded   int
}

func (e *CountError) Error() string {
	return fmt.Sprintf("relq: topic %q has %d partition(s) in Redis, configured with %d", e.Topic, e.Recorded, e.Configured)
}

// Is makes a *CountError match ErrCountMismatch.
func (e *CountError) Is(target error) bool { return target == ErrCountMismatch }

// recordVersion names the layout rule of New in the record, so that a later rule can tell the
// topics laid out by this one.
const recordVersion = "v1"

// record returns the count recorded for a topic, writing p when the topic has none and is not
// in use unpartitioned. P = 1 writes nothing: such a topic keeps exactly its unpartitioned keys.
//
// KEYS[1] the record; KEYS[2] a key that exists while the topic is in use unpartitioned (its
// meta), in the same slot. ARGV[1] p; ARGV[2] the record's value for p.
var record = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
if ARGV[1] == '1' then return false end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'unpartitioned' end
redis.call('SET', KEYS[1], ARGV[2])
return ARGV[2]
`)

// Keys names the Redis keys Ensure reads and writes for one topic; both must share the topic's
// hash tag.
type Keys struct {
	// Record holds the topic's partition count (<tag>:partitions).
	Record string
	// InUse exists while the topic holds data unpartitioned: the backend's topic meta key.
	InUse string
}

// RecordKey is the key that records the partition count of a topic whose keys carry tag.
func RecordKey(tag string) string { return keys.Join(tag, "partitions") }

// Ensure makes Redis agree that topic has p partitions, in one script: it records p for a new
// topic (p > 1), and fails with a *CountError when the topic was created with another count,
// or, for p > 1, is already in use unpartitioned. It returns the count Redis holds.
func Ensure(ctx context.Context, c redis.Scripter, topic string, p int, k Keys) (int, error) {
	v, err := record.Run(ctx, c, []string{k.Record, k.InUse}, p, recordVersion+":"+strconv.Itoa(p)).Text()
	recorded := 1
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return 0, fmt.Errorf("relq: record the partitions of %q: %w", topic, err)
	case v == "unpartitioned":
	default:
		n, ok := parseRecord(v)
		if !ok {
			return 0, fmt.Errorf("relq: topic %q: partition record %q not understood by this version", topic, v)
		}
		recorded = n
	}
	if recorded != p {
		return recorded, &CountError{Topic: topic, Configured: p, Recorded: recorded}
	}
	return recorded, nil
}

func parseRecord(v string) (int, bool) {
	ver, count, ok := strings.Cut(v, ":")
	if !ok || ver != recordVersion {
		return 0, false
	}
	n, err := strconv.Atoi(count)
	return n, err == nil && n >= 1 && n <= MaxCount
}

// Recorded returns the count recorded for topic, 1 when none is: a topic created without
// partitions, or not created yet.
func Recorded(ctx context.Context, c redis.Cmdable, topic, key string) (int, error) {
	v, err := c.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("relq: read the partitions of %q: %w", topic, err)
	}
	n, ok := parseRecord(v)
	if !ok {
		return 0, fmt.Errorf("relq: topic %q: partition record %q not understood by this version", topic, v)
	}
	return n, nil
}

// Check compares p with the count Redis records for topic, without writing: a *CountError when
// they differ, or when p > 1 and the topic is in use unpartitioned. A topic with no record and
// no data passes: its first publish records p.
func Check(ctx context.Context, c redis.UniversalClient, topic string, p int, k Keys) error {
	var rec *redis.StringCmd
	var inUse *redis.IntCmd
	_, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		rec = pipe.Get(ctx, k.Record)
		inUse = pipe.Exists(ctx, k.InUse)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("relq: read the partitions of %q: %w", topic, err)
	}
	recorded := 1
	if v, err := rec.Result(); err == nil {
		n, ok := parseRecord(v)
		if !ok {
			return fmt.Errorf("relq: topic %q: partition record %q not understood by this version", topic, v)
		}
		recorded = n
	} else if p == 1 || inUse.Val() == 0 {
		return nil
	}
	if recorded != p {
		return &CountError{Topic: topic, Configured: p, Recorded: recorded}
	}
	return nil
}
