package pubsub

import (
	"errors"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// claim is the claimer goroutine: it keeps buffer filled up to Concurrency+Prefetch held
// deliveries, one batch claim per round trip. It refills once half the capacity is free (or
// the buffer ran dry) rather than after every ack, so a busy subscription claims in batches
// instead of one message per round trip.
func (s *subscription) claim() {
	defer s.claimerWG.Done()
	capacity := s.config.Concurrency + s.config.Prefetch
	refill := max(1, capacity/2)
	r := newRetrier("claiming", s.config, s.logger)
	p := &backend.ClaimParams{
		Topic: s.topic, Group: s.config.Group, Consumer: s.config.Consumer,
		Lease: s.config.Lease, Block: s.config.Block, Ordered: s.config.Ordered,
	}
	for !s.isStopping() {
		free := capacity - s.held.activeCount()
		if free <= 0 || (free < refill && len(s.buffer) > 0) {
			select {
			case <-s.capacity:
			case <-s.stopping:
			}
			continue
		}
		p.Count = free
		// The stop cancels claimCtx, which ends a claim blocked waiting at once; what the
		// claim got before that is returned and released below.
		ds, err := s.backend.Claim(s.claimCtx, p)
		if err != nil {
			switch {
			case s.isStopping():
				return
			case errors.Is(err, backend.ErrGroupDeleted):
				s.groupDeleted(err)
				return
			case errors.Is(err, backend.ErrGroupLost):
				if !s.regain(err) {
					return
				}
				continue
			}
			sleep(r.failed(err), s.stopping)
			continue
		}
		r.ok()
		s.seen(ds)
		s.accept(ds)
	}
}

// accept puts claimed deliveries in the buffer, or releases them when the stop began while
// the claim was running. Deliveries that could not be decoded never reach a handler: they
// are dead-lettered with the decode error as the reason, and the subscription goes on.
func (s *subscription) accept(ds []backend.Delivery) {
	stopping := s.isStopping()
	for _, d := range ds {
		switch {
		case d.Err != nil:
			s.logger.Error("relq: dead-lettering an entry that cannot be decoded", d.Err,
				watermill.LogFields{"delivery_id": d.ID, "attempt": d.Attempt})
			s.settle(backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: d.Err.Error()})
		case stopping:
			s.settle(release(d))
		default:
			s.held.add(d)
			// Never blocks: buffer's capacity is Concurrency+Prefetch and the claim asked
			// for no more than the free part of it.
			s.buffer <- d
		}
	}
}
