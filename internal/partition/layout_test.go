package partition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
)

func relqTag(topic string) string { return keys.Tag("relq", topic) }

func TestCRC16IsRedisClusters(t *testing.T) {
	t.Parallel()
	// The check value of CRC-16/XMODEM, which the Redis Cluster specification quotes.
	require.Equal(t, uint16(0x31C3), crc16("123456789"))
	require.Equal(t, Slot("{user1000}.following"), Slot("{user1000}.followers"), "the hash tag decides")
	require.Equal(t, Slot("foo{}{bar}"), int(crc16("foo{}{bar}"))%Slots, "an empty tag hashes the whole key")
	require.Equal(t, Slot("foo{{bar}}zap"), int(crc16("{bar"))%Slots, "the tag ends at the first '}'")
}

// Every partition's tag falls in its own share of the slots, for every count, so partitions
// spread evenly over a cluster's primaries whatever the topic.
func TestPartitionsSpreadOverTheSlots(t *testing.T) {
	t.Parallel()
	for _, p := range []int{2, 3, 4, 7, 12, 64, 1000, MaxCount} {
		l, err := New("orders", p, relqTag)
		require.NoError(t, err)
		require.Equal(t, p, l.Count())
		seen := map[string]bool{}
		for i := range p {
			name := l.Name(i)
			require.True(t, strings.HasPrefix(name, fmt.Sprintf("orders|%d|", i)), name)
			require.NoError(t, backend.ValidateName("topic", name))
			s := Slot(relqTag(name))
			require.GreaterOrEqual(t, s, i*Slots/p, "partition %d of %d", i, p)
			require.Less(t, s, (i+1)*Slots/p, "partition %d of %d", i, p)
			require.False(t, seen[name])
			seen[name] = true
		}
	}
}

func TestOnePartitionIsTheTopicItself(t *testing.T) {
	t.Parallel()
	l, err := New("orders", 1, relqTag)
	require.NoError(t, err)
	require.Equal(t, 1, l.Count())
	require.Equal(t, "orders", l.Name(0))
	require.Equal(t, 0, l.ForKey("anything"))
}

func TestLayoutRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, p := range []int{-1, 0, MaxCount + 1} {
		_, err := New("orders", p, relqTag)
		require.ErrorIs(t, err, backend.ErrInvalidConfig, "p=%d", p)
	}
	_, err := New("bad{name}", 4, relqTag)
	require.ErrorIs(t, err, backend.ErrInvalidName)
	_, err = New(strings.Repeat("t", backend.MaxNameLength), 4, relqTag)
	require.ErrorIs(t, err, backend.ErrInvalidName, "a partition's name must fit the name limit")
}

// A key's partition is part of what is stored: these values must never change. They are the
// published FNV-1a 32-bit values ("" 0x811c9dc5, "a" 0xe40c292c, "foobar" 0xbf9cf968) and two
// more worked out apart from this code, modulo 12.
func TestKeysHashStably(t *testing.T) {
	t.Parallel()
	l, err := New("orders", 12, relqTag)
	require.NoError(t, err)
	for key, want := range map[string]int{"": 1, "a": 4, "foobar": 4, "customer-42": 10, "order/2026/12/03": 4} {
		require.Equal(t, want, l.ForKey(key), "key %q", key)
	}
	counts := make([]int, l.Count())
	const n = 120_000
	for i := range n {
		counts[l.ForKey(fmt.Sprintf("customer-%d", i))]++
	}
	for i, c := range counts {
		require.InDelta(t, n/l.Count(), c, float64(n/l.Count())/20, "partition %d got %d of %d keys", i, c, n)
	}
}

// On a real 3-primary cluster: Redis agrees with Slot, and 12 partitions land 4 on each
// primary, whatever the prefix.
func TestPartitionsLandEvenlyOnAClusterPrimaries(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{ReplicasPerMaster: -1})
	c := cluster.Client(t)
	ctx := context.Background()
	slots, err := c.ClusterSlots(ctx).Result()
	require.NoError(t, err)
	owner := func(slot int) string {
		for _, r := range slots {
			if slot >= int(r.Start) && slot <= int(r.End) {
				return r.Nodes[0].Addr
			}
		}
		t.Fatalf("slot %d has no owner", slot)
		return ""
	}
	for _, prefix := range []string{"relq", "billing-svc"} {
		tag := func(topic string) string { return keys.Tag(prefix, topic) }
		for _, p := range []int{3, 12, 48} {
			l, err := New("orders", p, tag)
			require.NoError(t, err)
			per := map[string]int{}
			for i := range p {
				key := tag(l.Name(i)) + ":meta"
				got, err := c.ClusterKeySlot(ctx, key).Result()
				require.NoError(t, err)
				require.Equal(t, int64(Slot(key)), got, key)
				per[owner(int(got))]++
			}
			require.Len(t, per, 3, "prefix %s, %d partitions: %v", prefix, p, per)
			for addr, n := range per {
				require.Equal(t, p/3, n, "prefix %s, %d partitions: primary %s has %d (%v)", prefix, p, addr, n, per)
			}
		}
	}
}

func TestCountErrorMatches(t *testing.T) {
	t.Parallel()
	var err error = &CountError{Topic: "orders", Configured: 4, Recorded: 8}
	require.ErrorIs(t, err, ErrCountMismatch)
	var ce *CountError
	require.True(t, errors.As(fmt.Errorf("wrapped: %w", err), &ce))
	require.Equal(t, `relq: topic "orders" has 8 partition(s) in Redis, configured with 4`, err.Error())
}
