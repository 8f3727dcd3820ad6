package adaptertest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// Tombstones is the key, without the tag, where an admin delete records the groups it deleted
// (see backend.TombstoneTTLDefault).
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
	LiveKeys(t, ctx, c, []string{tag + ":" + Tombstones})
	return slices.Delete(slices.Clone(keys), i, i+1)
}

// LiveKeys returns full key names less those of tombstones (ending in ":tombs"), after
// asserting that each of those expires within the default TombstoneTTL.
func LiveKeys(t *testing.T, ctx context.Context, c redis.UniversalClient, keys []string) []string {
	t.Helper()
	var out []string
	for _, k := range keys {
		if !strings.HasSuffix(k, ":"+Tombstones) {
			out = append(out, k)
			continue
		}
		left, err := c.PTTL(ctx, k).Result()
		require.NoError(t, err)
		require.Greater(t, left, time.Duration(0), "the tombstones %s expire", k)
		require.LessOrEqual(t, left, backend.TombstoneTTLDefault)
	}
	return out
}

// KeysLeft is Keys less the tombstones key (see WithoutTombstones).
func (e *Env) KeysLeft(topic string) []string {
	e.T.Helper()
	return WithoutTombstones(e.T, e.Ctx, e.C, e.Tag(topic), e.Keys(topic))
}

// Forget returns a conformance Harness.Forget: it deletes every key list names for a topic
// in one DEL, as a FLUSHALL would, so that no claim runs between two deletes (a topic's keys
// share its slot, in FormatWatermill the bare stream too, so this works on a Cluster).
func Forget(c redis.UniversalClient, list func(topic string) ([]string, error)) func(topic string) error {
	return func(topic string) error {
		keys, err := list(topic)
		if err != nil || len(keys) == 0 {
			return err
		}
		return c.Del(context.Background(), keys...).Err()
	}
}

// ForgetByTag is Forget for keys under several hash tags (the partitions of a topic): one DEL
// per tag, each as a FLUSHALL of that slot would, so that it works on a Cluster too.
func ForgetByTag(c redis.UniversalClient, list func(topic string) ([]string, error)) func(topic string) error {
	return func(topic string) error {
		keys, err := list(topic)
		if err != nil {
			return err
		}
		byTag := map[string][]string{}
		var tags []string
		for _, k := range keys {
			tag, _, _ := strings.Cut(k, "}")
			if _, ok := byTag[tag]; !ok {
				tags = append(tags, tag)
			}
			byTag[tag] = append(byTag[tag], k)
		}
		for _, tag := range tags {
			if err := c.Del(context.Background(), byTag[tag]...).Err(); err != nil {
				return err
			}
		}
		return nil
	}
}
