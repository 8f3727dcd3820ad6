package pubsub

import (
	"time"

	"github.com/ThreeDotsLabs/watermill"
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
		lost, err := s.backend.Extend(s.hard, &ExtendParams{
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

// reclaim returns the group's expired leases to ready (and dead-letters those out of
// attempts) every ReclaimInterval ±20%, starting at once so that what a crashed consumer
// left behind comes back without waiting an interval. Any consumer of the group may do it;
// the jitter keeps many consumers from doing it in lockstep. Each round also registers the
// group again (EnsureGroup), so a registration that Redis lost is back within an interval.
func (s *subscription) reclaim() {
	defer s.loopsWG.Done()
	r := newRetrier("reclaiming expired leases", s.config, s.logger)
	p := &ReclaimParams{
		Topic: s.topic, Group: s.config.Group,
		MaxDeliveries: s.config.MaxDeliveries, OrphanLease: s.config.Lease,
	}
	register := &EnsureGroupParams{Topic: s.topic, Group: s.config.Group, FromOldest: s.config.FromOldest}
	var wait time.Duration
	for sleep(wait, s.stopping) {
		res, err := s.backend.Reclaim(s.hard, p)
		if err != nil {
			wait = r.failed(err)
			continue
		}
		// Register the group again: a failover to a replica that missed Subscribe's
		// registration would otherwise leave the group out of every later publish for good.
		// Idempotent, one round trip per ReclaimInterval.
		if err := s.backend.EnsureGroup(s.hard, register); err != nil {
			wait = r.failed(err)
			continue
		}
		r.ok()
		if res.Reclaimed > 0 || res.DeadLettered > 0 || res.Orphans > 0 {
			s.logger.Debug("relq: reclaimed expired leases", watermill.LogFields{
				"reclaimed": res.Reclaimed, "dead_lettered": res.DeadLettered, "orphans": res.Orphans,
			})
		}
		wait = jitter(s.config.ReclaimInterval, 0.2)
	}
}
