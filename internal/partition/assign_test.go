package partition

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
)

type group struct {
	t     *testing.T
	c     *redis.Client
	k     AssignKeys
	p     int
	lease time.Duration
}

func newGroup(t *testing.T, c *redis.Client, p int, lease time.Duration) *group {
	return &group{t: t, c: c, k: GroupAssignKeys(keys.Tag(redistest.Prefix(t), "orders"), "billing"), p: p, lease: lease}
}

func (g *group) sync(member string) Assignment {
	g.t.Helper()
	a, err := Sync(context.Background(), g.c, g.k, member, g.p, g.lease)
	require.NoError(g.t, err)
	return a
}

// rounds syncs every member in turn until a round changes nothing, and returns what each holds.
func (g *group) rounds(members ...string) map[string][]int {
	g.t.Helper()
	var last map[string][]int
	for range 5 {
		now := map[string][]int{}
		for _, m := range members {
			for _, o := range g.sync(m).Owned {
				now[m] = append(now[m], o.Partition)
			}
		}
		if fmt.Sprint(now) == fmt.Sprint(last) {
			return now
		}
		last = now
	}
	g.t.Fatalf("no steady assignment after 5 rounds: %v", last)
	return nil
}

// requireShared: every partition has exactly one holder and shares differ by at most one.
func (g *group) requireShared(held map[string][]int, members int) {
	g.t.Helper()
	var all []int
	least, most := g.p, 0
	for _, ps := range held {
		all = append(all, ps...)
		least, most = min(least, len(ps)), max(most, len(ps))
	}
	if len(held) < members {
		least = 0
	}
	slices.Sort(all)
	want := make([]int, g.p)
	for i := range want {
		want[i] = i
	}
	require.Equal(g.t, want, all, "every partition held exactly once: %v", held)
	require.LessOrEqual(g.t, most-least, 1, "shares differ by at most one: %v", held)
}

func TestMembersShareThePartitions(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{}).Client(t)

	g := newGroup(t, c, 12, 10*time.Second)
	a := g.sync("a")
	require.Equal(t, 1, a.Members)
	require.Len(t, a.Owned, 12, "a lone member holds every partition")

	held := g.rounds("a", "b", "c")
	g.requireShared(held, 3)
	require.Len(t, held["a"], 4)
	// A join moves only what the newcomer needs: a keeps 4 of the 12 it had.
	g2 := g.rounds("a", "b", "c", "d", "e")
	g.requireShared(g2, 5)
	for _, m := range []string{"a", "b", "c"} {
		require.Subset(t, held[m], g2[m], "%s only gave partitions away", m)
	}
}

func TestAMemberThatStopsLosesItsPartitions(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{}).Client(t)
	const lease = time.Second
	g := newGroup(t, c, 12, lease)
	held := g.rounds("a", "b", "c")
	g.requireShared(held, 3)
	epochs := map[int]int64{}
	for _, o := range g.sync("c").Owned {
		epochs[o.Partition] = o.Epoch
	}

	// c stops syncing. Until its lease ends nobody takes its partitions.
	require.Len(t, g.sync("a").Owned, 4)
	time.Sleep(lease + 100*time.Millisecond)
	now := g.rounds("a", "b")
	g.requireShared(now, 2)
	for p, e := range epochs {
		for _, o := range append(g.sync("a").Owned, g.sync("b").Owned...) {
			if o.Partition == p {
				require.Greater(t, o.Epoch, e, "partition %d changed hands: a new epoch fences c", p)
			}
		}
	}
	// c comes back as a member like any other and gets its share again.
	g.requireShared(g.rounds("a", "b", "c"), 3)
}

func TestALeavingMemberFreesItsPartitionsAtOnce(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{}).Client(t)
	g := newGroup(t, c, 7, time.Minute)
	g.requireShared(g.rounds("a", "b"), 2)
	require.NoError(t, Leave(context.Background(), c, g.k, "b", g.p))
	a := g.sync("a")
	require.Equal(t, 1, a.Members)
	require.Len(t, a.Owned, 7, "b's partitions went to a at its next sync, not after b's lease")
}

func TestAnAbandonedGroupLeavesNoKeys(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{}).Client(t)
	g := newGroup(t, c, 4, 100*time.Millisecond)
	g.rounds("a", "b")
	require.Eventually(t, func() bool {
		return c.Exists(context.Background(), g.k.Members, g.k.Owners, g.k.Epochs).Val() == 0
	}, 5*time.Second, 20*time.Millisecond, "the keys expire three leases after the last sync")
}
