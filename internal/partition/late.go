package partition

import (
	"context"
	"time"

	"github.com/relq/relq/backend"
)

// slowClaim is how long a member's round waits for one partition's claim before it goes on
// without it. A healthy claim takes one round trip; one sent to a primary that just died can
// spend the client's dial and command retries, seconds, before it fails, and the partitions
// of the other primaries must not wait that long.
const slowClaim = 100 * time.Millisecond

// lateClaim is a claim a round stopped waiting for: its result is taken by a later round.
type lateClaim struct {
	done    chan claimResult // buffered: the claim never blocks on a round
	version uint64           // the bell's version when it began
	want    int
}

type claimResult struct {
	ds  []backend.Delivery
	err error
}

// claimMember claims up to want from partition i for member m, waiting at most slowClaim.
// late reports a claim that took longer: it runs on, and a later round takes its result
// (takeLate), while this one goes on with the other partitions. A partition with a claim
// still running is not asked again until it ends.
func (b *Backend) claimMember(ctx context.Context, m *member, i int, p *backend.ClaimParams, want int, version uint64) (ds []backend.Delivery, err error, late bool) {
	lc := &lateClaim{done: make(chan claimResult, 1), version: version, want: want}
	params := &backend.ClaimParams{Topic: m.t.layout.Name(i), Group: p.Group, Consumer: p.Consumer, Count: want, Lease: p.Lease}
	go func() {
		ds, err := b.inner.Claim(ctx, params)
		lc.done <- claimResult{ds, err}
	}()
	wait := time.NewTimer(slowClaim)
	defer wait.Stop()
	select {
	case r := <-lc.done:
		return r.ds, r.err, false
	case <-wait.C:
	}
	m.mu.Lock()
	if m.late == nil {
		m.late = map[int]*lateClaim{}
	}
	m.late[i] = lc
	m.mu.Unlock()
	return nil, nil, true
}

// takeLate collects the results of m's late claims that ended, keeps their deliveries for the
// rounds to hand out, and returns up to count of those kept (no more than the caller asked
// for: the rest waits for the next round, under the lease it was claimed with; if that runs
// out first, the message is reclaimed, as any lease that is not extended).
func (m *member) takeLate(count int) []backend.Delivery {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, lc := range m.late {
		var r claimResult
		select {
		case r = <-lc.done:
		default:
			continue
		}
		delete(m.late, i)
		if r.err != nil {
			m.failedLocked(i)
			continue
		}
		m.askedLocked(i, lc.version, len(r.ds) >= lc.want)
		for _, d := range r.ds {
			m.kept = append(m.kept, keptDelivery{i, d})
		}
	}
	n := min(count, len(m.kept))
	out := make([]backend.Delivery, 0, n)
	for _, k := range m.kept[:n] {
		m.t.seen(m.key.group, k.partition, k.d.ID)
		k.d.ID = m.t.outer(k.partition, k.d.ID)
		out = append(out, k.d)
	}
	m.kept = m.kept[n:]
	return out
}

// keptDelivery is a delivery of a late claim, waiting for a round.
type keptDelivery struct {
	partition int
	d         backend.Delivery
}

// claiming reports a late claim still running on partition i.
func (m *member) claiming(i int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.late[i]
	return ok
}
