package pubsub

import (
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// heartbeat extends, every HeartbeatInterval, the lease of every delivery the subscription
// holds: buffered, with a handler, or with its ack on the way. It runs until the very end
// of the stop, since handlers keep running during CloseTimeout. After a failure it retries
// with backoff rather than waiting a full interval, because the leases are running out.
func (s *subscription) heartbeat() {
	defer s.loopsWG.Done()
	r := newRetrier("extending leases", s.config, s.logger)
	wait := s.config.HeartbeatInterval
	for sleep(wait, s.hard.Done()) {
		wait = s.config.HeartbeatInterval
		items := s.held.leases()
		if len(items) == 0 {
			continue
		}
		lost, err := s.backend.Extend(s.hard, &backend.ExtendParams{
			Topic: s.topic, Group: s.config.Group, Consumer: s.config.Consumer,
			Items: items, Lease: s.config.Lease,
		})
		if err != nil {
			if s.hard.Err() == nil {
				wait = r.failed(err)
			}
			continue
		}
		r.ok()
		if len(lost) == 0 {
			continue
		}
		if handling := s.held.markLost(lost); len(handling) > 0 {
			s.logger.Info("relq: lost the lease of messages still being handled; another consumer may handle them too",
				watermill.LogFields{"delivery_ids": handling})
		}
		s.freed() // lost buffered deliveries free capacity once a worker discards them
	}
}

// expiryMargin is how long after a reported lease expiry the reclaim loop runs: enough for
// the Redis clock to have passed the deadline (kept in milliseconds), short enough that the
// messages of a dead consumer come back a few milliseconds after their lease ends.
const expiryMargin = 5 * time.Millisecond

// reclaim returns the group's expired leases to ready (and dead-letters those out of
// attempts). It runs at once, so that what a crashed consumer left behind comes back without
// waiting, then at the earlier of two times:
//
//   - the sweep, every ReclaimInterval ±20%: the safety net;
//   - just after the earliest pending lease expires, as the last Reclaim reported it
//     (ReclaimResult.NextExpiry), so expired leases come back at expiry rather than at the
//     next sweep. A Reclaim that stopped at its bound reports a lease already due, and so
//     runs again within a few milliseconds.
//
// Leases taken after a Reclaim are not in what it reported; the next sweep sees them, which
// is before they can expire as long as ReclaimInterval is shorter than the lease (Lease/2 by
// default). Any consumer of the group may reclaim; the jitter keeps many from doing it in
// lockstep.
//
// It does not register the group every sweep (it once did, in case a failover lost the
// registration): a group deleted with Admin must stay deleted. The claims tell a delete
// (ErrGroupDeleted: a tombstone, the subscription stops) from a registration that vanished
// (ErrGroupLost: it is registered again, regain.go).
func (s *subscription) reclaim() {
	defer s.loopsWG.Done()
	r := newRetrier("reclaiming expired leases", s.config, s.logger)
	p := &backend.ReclaimParams{
		Topic: s.topic, Group: s.config.Group,
		MaxDeliveries: s.config.MaxDeliveries, OrphanLease: s.config.Lease,
	}
	var (
		wait    time.Duration
		sweepAt time.Time // the next sweep; zero: now
		idle    time.Duration
	)
	for sleep(wait, s.stopping) {
		res, err := s.backend.Reclaim(s.hard, p)
		if err != nil {
			if errors.Is(err, backend.ErrGroupDeleted) {
				s.groupDeleted(err)
				return
			}
			if errors.Is(err, backend.ErrGroupLost) {
				if !s.regain(err) {
					return
				}
				continue
			}
			wait = r.failed(err)
			continue
		}
		r.ok()
		if now := time.Now(); !now.Before(sweepAt) {
			sweepAt = now.Add(jitter(s.config.ReclaimInterval, 0.2))
		}
		if res.Reclaimed > 0 || res.DeadLettered > 0 || res.Orphans > 0 {
			s.logger.Debug("relq: reclaimed expired leases", watermill.LogFields{
				"reclaimed": res.Reclaimed, "dead_lettered": res.DeadLettered, "orphans": res.Orphans,
			})
		}
		wait, idle = reclaimWait(res, time.Until(sweepAt), idle)
	}
}

// reclaimWait returns how long the reclaim loop sleeps after a Reclaim that returned res,
// with the next sweep untilSweep away: until just after the next lease expiry when that comes
// first. idle is the floor of a wake for a lease reported due that then found nothing to do;
// it doubles while that repeats (a lease extended at its deadline, or a backend reporting a
// lease it cannot reclaim), so a stuck report cannot make a busy loop.
func reclaimWait(res backend.ReclaimResult, untilSweep, idle time.Duration) (wait, nextIdle time.Duration) {
	if res.NextExpiry == 0 {
		return untilSweep, 0
	}
	soon := max(res.NextExpiry, 0) + jitter(expiryMargin, 0.5)
	worked := res.Reclaimed+res.DeadLettered+res.Orphans+res.Promoted+res.Removed > 0
	if res.NextExpiry <= expiryMargin && !worked {
		idle = min(max(2*idle, expiryMargin), untilSweep)
		soon = max(soon, idle)
	} else {
		idle = 0
	}
	return min(untilSweep, soon), idle
}
