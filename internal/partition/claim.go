package partition

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/relq/relq/backend"
)

// Claim claims from the partitions the consumer owns (every partition for a consumer that is
// no member: see Assign), one partition at a time from a point that turns with every round,
// until p.Count are claimed or every partition it may claim from was asked. With nothing
// claimed it sleeps on the topic's bell up to p.Block (less when its share is due a sync),
// then runs one more round.
func (b *Backend) Claim(ctx context.Context, p *backend.ClaimParams) ([]backend.Delivery, error) {
	if p.Lease <= 0 {
		return nil, &backend.ConfigError{Field: "ClaimParams.Lease", Reason: "must be positive"}
	}
	if err := check(p.Topic, p.Group); err != nil {
		return nil, err
	}
	if err := backend.ValidateName("consumer", p.Consumer); err != nil {
		return nil, err
	}
	t, err := b.topics.get(ctx, p.Topic)
	if err != nil {
		return nil, err
	}
	if t.single() {
		if !p.Ordered {
			return b.inner.Claim(ctx, p)
		}
		return b.claimOrderedSingle(ctx, t, p)
	}
	m := b.lookup(memberKey{p.Topic, p.Group, p.Consumer})
	if m == nil {
		m = &member{t: t}
		if p.Block > 0 {
			m.bell = b.bells.acquire(ctx, b.cfg.Tag(p.Topic))
			defer b.bells.release(m.bell)
		}
	}
	var ring <-chan struct{}
	if p.Block > 0 {
		ring = m.bell.next()
	}
	ds, err := b.round(ctx, m, p)
	if len(ds) > 0 || err != nil || p.Block <= 0 {
		return ds, err
	}
	block := p.Block
	if m.isMember() {
		block = min(block, m.nextSync())
	}
	wait := time.NewTimer(block)
	defer wait.Stop()
	select {
	case <-ring:
	case <-wait.C:
		m.sweepNext() // no ring for a Block: ask every partition, whatever the bell said
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.round(ctx, m, p)
}

// round syncs m's share when due and claims up to p.Count from its partitions without waiting:
// a member asks only the partitions the bell rang for since it found them drained (all of
// them after a silent Block or a change of its share), a consumer that is no member every
// partition. A partition that fails is skipped, and a member asks it again after a wait that
// grows while it keeps failing (failWaitMin to failWaitMax); the round fails
// only when every partition it asked failed, or at once when the group is gone (ErrGroupLost,
// ErrGroupDeleted) with nothing claimed.
func (b *Backend) round(ctx context.Context, m *member, p *backend.ClaimParams) ([]backend.Delivery, error) {
	var ask []int
	if m.isMember() {
		owned, err := b.sync(ctx, m, p.Lease)
		if err != nil || len(owned) == 0 {
			return nil, err
		}
		ask = m.toAsk(owned)
		if p.Ordered {
			b.releaseLeft(ctx, m.t, m.key, owned)
		}
	} else {
		ask = all(m.t.layout.Count())
	}
	count := max(p.Count, 1)
	var out []backend.Delivery
	if m.isMember() && !p.Ordered {
		out = m.takeLate(count)
	}
	if len(ask) == 0 {
		return out, nil
	}
	start := m.rotate(len(ask))
	var (
		failed, late int
		firstErr     error
	)
	for k := 0; k < len(ask) && len(out) < count; k++ {
		i := ask[(start+k)%len(ask)]
		var version uint64
		if m.isMember() {
			version = m.bell.version(i)
		}
		want := count - len(out)
		var ds []backend.Delivery
		var err error
		switch {
		case p.Ordered:
			ds, _, err = b.claimOrdered(ctx, m.t, i, p, 0)
		case m.isMember():
			var slow bool
			if ds, err, slow = b.claimMember(ctx, m, i, p, want, version); slow {
				late++
				continue
			}
		default:
			ds, err = b.inner.Claim(ctx, &backend.ClaimParams{
				Topic: m.t.layout.Name(i), Group: p.Group, Consumer: p.Consumer,
				Count: want, Lease: p.Lease,
			})
		}
		if err != nil {
			if errors.Is(err, backend.ErrGroupLost) || errors.Is(err, backend.ErrGroupDeleted) {
				if len(out) > 0 {
					return out, nil // held: the next round meets the error again
				}
				return nil, err
			}
			// A partition whose primary does not answer (a failover) holds up only itself:
			// the round goes on with the others, and fails only when every one failed.
			failed++
			firstErr = cmp.Or(firstErr, err)
			if m.isMember() {
				m.failed(i)
			}
			continue
		}
		if m.isMember() {
			m.asked(i, version, len(ds) >= want)
		}
		for _, d := range ds {
			m.t.seen(p.Group, i, d.ID)
			d.ID = m.t.outer(i, d.ID)
			out = append(out, d)
		}
	}
	if len(out) == 0 && failed > 0 && failed+late == len(ask) {
		return nil, firstErr
	}
	return out, nil
}

// claimOrderedSingle claims in order from a topic of one partition: the inner claim waits
// for a message while the consumer holds the topic's lock; while its delivery is out or the
// topic is gated, the consumer waits on the bell for its own settle or the gate's end.
func (b *Backend) claimOrderedSingle(ctx context.Context, t *topic, p *backend.ClaimParams) ([]backend.Delivery, error) {
	var ring <-chan struct{}
	if p.Block > 0 {
		ring = b.singleBell(ctx, memberKey{p.Topic, p.Group, p.Consumer}).next()
	}
	ds, waited, err := b.claimOrdered(ctx, t, 0, p, p.Block)
	if len(ds) > 0 || err != nil || waited || p.Block <= 0 {
		return ds, err
	}
	wait := time.NewTimer(p.Block)
	defer wait.Stop()
	select {
	case <-ring:
	case <-wait.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ds, _, err = b.claimOrdered(ctx, t, 0, p, 0)
	return ds, err
}
