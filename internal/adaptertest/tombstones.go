package adaptertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// Tombstones is the key, without the tag, where an admin delete records the groups it deleted
// (see pubsub.TombstoneTTLDefault).
const Tombstones = "tombs"

// WithoutTombstones returns keys (a topic's keys without its tag) less the tombstones key,
// after asserting that the tombstones key, when there is one, expires within the default
// TombstoneTTL: what an admin delete may leave behind, and only for a bounded time.
func WithoutTombstones(t *testing.T, ctx context.Context, c redis.UniversalClient, tag string, keys []string) []string {
	t.Helper()
	i := slices.Index(keys, Tombstones)
	if i < 0 {
		return keys
	}
	left, err := c.PTTL(ctx, tag+":"+Tombstones).Result()
	require.NoError(t, err)
	require.Greater(t, left, time.Duration(0), "the tombstones expire")
	require.LessOrEqual(t, left, pubsub.TombstoneTTLDefault)
	return slices.Delete(slices.Clone(keys), i, i+1)
}

// KeysLeft is Keys less the tombstones key (see WithoutTombstones).
func (e *Env) KeysLeft(topic string) []string {
	e.T.Helper()
	return WithoutTombstones(e.T, e.Ctx, e.C, e.Tag(topic), e.Keys(topic))
}

// forget returns a conformance Harness.Forget: it deletes every key list names for a topic,
// one by one (keys of one topic share a slot, but a plain DEL of each needs no such care).
func forget(c redis.UniversalClient, list func(topic string) ([]string, error)) func(topic string) error {
	return func(topic string) error {
		keys, err := list(topic)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := c.Del(context.Background(), k).Err(); err != nil {
				return err
			}
		}
		return nil
	}
}
