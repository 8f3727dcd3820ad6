package partition

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/relq/relq/backend"
)

// A subscription of a partitioned topic is a member of its group's assignment (Assign): it
// syncs its share every syncEvery at most, from its claims and its lease extensions, so that
// a running subscription keeps its partitions whether it is claiming or busy. A member that
// joins short of its quota, or leaves, rings the topic's bell to have the others sync at once.
// A consumer that claims without having been assigned (a tool, a test driving the backend)
// is no member: it claims from every partition.

// syncEvery bounds how old a member's view of its share gets. A member that died is found at
// the next Sync of another after its lease ended: this bound is what a takeover waits beyond
// the lease.
func syncEvery(lease time.Duration) time.Duration { return min(lease/4, 250*time.Millisecond) }

// syncShort is how soon a member short of its quota syncs again, to take the partitions the
// others release at their own syncs.
const syncShort = 20 * time.Millisecond

type memberKey struct{ topic, group, consumer string }

type member struct {
	key  memberKey
	t    *topic
	tag  string
	bell *bell

	mu      sync.Mutex // guards the rest; never held across a Redis call
	owned   []int
	quota   int
	synced  time.Time
	lease   time.Duration
	used    time.Time
	next    int    // where the next claim round starts in owned
	heard   uint64 // the bell's shuffles when this member last synced
	members int    // the group's members at the last sync
	// What the member knows of its partitions' contents: the bell's version of each when it
	// last found it drained (seen), whether its last claim there filled up (full, so more may
	// wait), and whether its next round asks every partition (sweep).
	seen  map[int]uint64
	full  map[int]bool
	sweep bool
	asks  []int // the partitions it asked in its last round, to notice a change of its share
	// failing holds the partitions whose last claim failed (their primary did not answer):
	// when to ask again, and the wait after the next failure.
	failing map[int]retryAt
	// syncFail is when to sync again after the assignment's slot did not answer.
	syncFail retryAt
	// late holds the claims a round stopped waiting for, by partition, and kept what they
	// brought that no round handed out yet (late.go).
	late map[int]*lateClaim
	kept []keptDelivery
}

// retryAt is when a failing partition is asked again, and the wait after its next failure.
type retryAt struct {
	at   time.Time
	wait time.Duration
}

// Waits before asking a failing partition again: a round does not spend the client's retries on
// a primary that is down each time, while the others' partitions flow.
const (
	failWaitMin = 100 * time.Millisecond
	failWaitMax = 2 * time.Second
)

// syncFailMax bounds the wait before a member syncs again after its sync failed: once the
// assignment's slot answers again, shares move again within it.
const syncFailMax = time.Second

type members struct {
	mu sync.Mutex
	m  map[memberKey]*member
}

// Assign makes consumer a member of group's assignment on topic: its claims take from the
// partitions it is given, rather than from all of them. A subscription calls it before its
// first claim and Unassign when it ends. It reads nothing from Redis: the first claim syncs.
func (b *Backend) Assign(ctx context.Context, topic, group, consumer string) error {
	if err := check(topic, group); err != nil {
		return err
	}
	if err := backend.ValidateName("consumer", consumer); err != nil {
		return err
	}
	t, err := b.topics.get(ctx, topic)
	if err != nil || t.single() {
		return err // one partition: nothing to share
	}
	k := memberKey{topic, group, consumer}
	ms := &b.members
	ms.mu.Lock()
	defer ms.mu.Unlock()
	now := time.Now()
	b.sweepOrdered(now, memberKey{topic, group, consumer})
	for key, m := range ms.m {
		if key != k && m.idle(now) {
			delete(ms.m, key)
			b.bells.release(m.bell)
		}
	}
	if _, ok := ms.m[k]; ok {
		return nil
	}
	if ms.m == nil {
		ms.m = map[memberKey]*member{}
	}
	tag := b.cfg.Tag(topic)
	ms.m[k] = &member{key: k, t: t, tag: tag, bell: b.bells.acquire(ctx, tag), used: now}
	return nil
}

// isMember tells a member (Assign) from the stand-in of a consumer that is none.
func (m *member) isMember() bool { return m.tag != "" }

// idle reports a member not used for three leases.
func (m *member) idle(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease > 0 && now.Sub(m.used) > 3*m.lease
}

// lookup returns the member of k if this process has it.
func (b *Backend) lookup(k memberKey) *member {
	b.members.mu.Lock()
	defer b.members.mu.Unlock()
	return b.members.m[k]
}

// local lists the partitions this process's members of a group own, nil when it has none.
func (b *Backend) local(topic, group string) []int {
	b.members.mu.Lock()
	ms := make([]*member, 0, len(b.members.m))
	for k, m := range b.members.m {
		if k.topic == topic && k.group == group {
			ms = append(ms, m)
		}
	}
	b.members.mu.Unlock()
	seen := map[int]bool{}
	var out []int
	for _, m := range ms {
		m.mu.Lock()
		for _, i := range m.owned {
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
		m.mu.Unlock()
	}
	return out
}

// sync renews m's membership and share when due, and returns the partitions it owns.
func (b *Backend) sync(ctx context.Context, m *member, lease time.Duration) ([]int, error) {
	now := time.Now()
	m.mu.Lock()
	m.used, m.lease = now, lease
	age := now.Sub(m.synced)
	heard := m.bell.shuffled()
	due := age >= syncEvery(lease) || (len(m.owned) < m.quota && age >= syncShort) || m.synced.IsZero() || heard != m.heard
	due = due && !now.Before(m.syncFail.at)
	owned := slices.Clone(m.owned)
	joined := m.synced.IsZero()
	m.mu.Unlock()
	if !due {
		return owned, nil
	}
	syncCtx := ctx
	if !joined {
		// A member with a share claims on with it while the assignment's slot is slow or
		// down: the sync may not hold up the round for longer than one period.
		var cancel context.CancelFunc
		syncCtx, cancel = context.WithTimeout(ctx, syncEvery(lease))
		defer cancel()
	}
	a, err := Sync(syncCtx, b.cfg.Client, GroupAssignKeys(m.tag, m.key.group), m.key.consumer, m.t.layout.Count(), lease)
	if err != nil {
		if joined || ctx.Err() != nil {
			return owned, err
		}
		// The group's assignment lives on the topic's own slot: while its primary does not
		// answer, the member keeps its share, and tries again after a wait that grows from a
		// period to failWaitMax, so that its rounds go on claiming meanwhile rather than
		// spending each period in a sync that times out. Nobody can move a partition
		// meanwhile, since every member's sync fails alike.
		m.mu.Lock()
		wait := max(syncEvery(lease), min(2*m.syncFail.wait, syncFailMax))
		m.syncFail = retryAt{at: time.Now().Add(wait), wait: wait}
		m.mu.Unlock()
		return owned, nil
	}
	owned = owned[:0]
	for _, o := range a.Owned {
		owned = append(owned, o.Partition)
	}
	m.mu.Lock()
	changed := a.Members != m.members
	m.owned, m.quota, m.synced, m.heard, m.members = slices.Clone(owned), a.Quota, now, heard, a.Members
	m.syncFail = retryAt{}
	m.mu.Unlock()
	// A join, or a member that left or died, changes every member's quota: the first member
	// to see it has the others sync now.
	if (changed && a.Members > 1) || (joined && len(owned) < a.Quota) {
		b.bells.shuffle(ctx, m.tag)
	}
	return owned, nil
}

// nextSync is how long until m's next sync is due.
func (m *member) nextSync() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	every := syncEvery(m.lease)
	if len(m.owned) < m.quota {
		every = syncShort
	}
	return max(every-time.Since(m.synced), time.Until(m.syncFail.at), time.Millisecond)
}

// toAsk lists the owned partitions a round asks: those rung since they were found drained,
// those whose last claim filled up, and all of them after sweepNext or a change of share.
func (m *member) toAsk(owned []int) []int {
	m.mu.Lock() // then the bell's lock, in version: never the other way round
	defer m.mu.Unlock()
	sweep := m.sweep || !slices.Equal(owned, m.asks)
	m.sweep, m.asks = false, slices.Clone(owned)
	now := time.Now()
	var out []int
	for _, i := range owned {
		if f, ok := m.failing[i]; ok && now.Before(f.at) {
			continue
		}
		if _, ok := m.late[i]; ok {
			continue
		}
		v, known := m.seen[i]
		if sweep || !known || m.full[i] || v != m.bell.version(i) {
			out = append(out, i)
		}
	}
	return out
}

// failed records a claim from partition i that failed: it is asked again after a wait that
// doubles with each failure in a row. The next round asks every other partition: the bell,
// which tells the member which ones got messages, may ride on the primary that failed.
func (m *member) failed(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failedLocked(i)
}

func (m *member) failedLocked(i int) {
	if m.failing == nil {
		m.failing = map[int]retryAt{}
	}
	wait := max(failWaitMin, min(2*m.failing[i].wait, failWaitMax))
	m.failing[i] = retryAt{at: time.Now().Add(wait), wait: wait}
	if m.full == nil {
		m.seen, m.full = map[int]uint64{}, map[int]bool{}
	}
	m.full[i] = true // asked once its wait is over, whatever the bell says
	m.sweep = true
}

// asked records a claim from partition i that began at the bell's version v and filled up or not.
func (m *member) asked(i int, v uint64, filled bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.askedLocked(i, v, filled)
}

func (m *member) askedLocked(i int, v uint64, filled bool) {
	if m.seen == nil {
		m.seen, m.full = map[int]uint64{}, map[int]bool{}
	}
	m.seen[i], m.full[i] = v, filled
	delete(m.failing, i)
}

// sweepNext makes the next round ask every owned partition.
func (m *member) sweepNext() {
	m.mu.Lock()
	m.sweep = true
	m.mu.Unlock()
}

// rotate returns where the next claim round starts among n owned partitions, and moves it on,
// so that no partition is always served last.
func (m *member) rotate(n int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	return m.next % n
}

// Unassign ends consumer's membership of group at once, freeing its partitions for the other
// members' next sync, as a subscription that stops does once it settled what it held.
func (b *Backend) Unassign(ctx context.Context, topic, group, consumer string) error {
	k := memberKey{topic, group, consumer}
	t, err := b.topics.get(ctx, topic)
	if err != nil {
		b.forgetOrdered(k)
		return err
	}
	if err := b.unassignOrdered(ctx, t, k); err != nil {
		return err
	}
	if t.single() && b.lookup(k) == nil {
		return nil
	}
	b.members.mu.Lock()
	m, ok := b.members.m[k]
	delete(b.members.m, k)
	b.members.mu.Unlock()
	if ok {
		b.bells.release(m.bell)
	}
	if err := Leave(ctx, b.cfg.Client, GroupAssignKeys(b.cfg.Tag(topic), group), consumer, t.layout.Count()); err != nil {
		return err
	}
	b.bells.shuffle(ctx, b.cfg.Tag(topic))
	return nil
}

// Owned lists the partitions consumer held at its last sync, for tests and tools; nil when it
// is no member here.
func (b *Backend) Owned(topic, group, consumer string) []int {
	m := b.lookup(memberKey{topic, group, consumer})
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.owned)
}
