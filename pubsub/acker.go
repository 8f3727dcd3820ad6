package pubsub

import (
	"github.com/ThreeDotsLabs/watermill"
)

// ack is the acker goroutine. Workers queue their results in the heldSet and wake it; it
// takes everything queued and makes one Ack and one Nack call for it, then takes whatever
// accumulated while those calls were in flight. There is no timer and no minimum batch:
// an idle subscription acks at once, a busy one batches as much as one round trip allows.
//
// It runs until ackerQuit is closed (no worker or claimer is left) and the queue is empty,
// so the stop flushes every result; a call that fails is retried until it succeeds or hard
// is cancelled (CloseTimeout passed), after which the leases of what is left just expire.
// Acks go first: a nack or release waiting behind them costs nothing but a little latency.
func (s *subscription) ack() {
	defer s.ackerWG.Done()
	ar := newRetrier("acking", s.config, s.logger)
	nr := newRetrier("nacking", s.config, s.logger)
	quitting := false
	for {
		if !quitting {
			select {
			case <-s.ackerWake:
			case <-s.ackerQuit:
				quitting = true
			}
		}
		acks, nacks := s.held.queued()
		if len(acks) == 0 && len(nacks) == 0 {
			if quitting {
				return
			}
			continue
		}
		s.flushAcks(acks, ar)
		s.flushNacks(nacks, nr)
	}
}

// flushAcks acks a batch, retrying until it succeeds or hard is cancelled. An error that
// retrying cannot fix (permanent) is logged and the batch left to lease expiry, rather than
// holding up every later ack.
func (s *subscription) flushAcks(items []Held, r *retrier) {
	if len(items) == 0 {
		return
	}
	p := &AckParams{Topic: s.topic, Group: s.config.Group, Consumer: s.config.Consumer, Items: items}
	for {
		res, err := s.backend.Ack(s.hard, p)
		if err == nil {
			r.ok()
			if res.Stale > 0 {
				s.logger.Info("relq: acked deliveries whose lease had expired; they may have been delivered twice",
					watermill.LogFields{"stale": res.Stale})
			}
			break
		}
		if permanent(err) || !sleep(r.failed(err), s.hard.Done()) {
			s.logger.Error("relq: giving up acking; the leases will expire and the messages be redelivered",
				err, watermill.LogFields{"count": len(items)})
			break
		}
	}
	for _, it := range items {
		s.held.forget(it)
	}
}

// flushNacks nacks (or releases, or dead-letters) a batch, retrying like flushAcks.
func (s *subscription) flushNacks(items []NackItem, r *retrier) {
	if len(items) == 0 {
		return
	}
	p := &NackParams{
		Topic: s.topic, Group: s.config.Group, Consumer: s.config.Consumer, Items: items,
		MaxDeliveries: s.config.MaxDeliveries,
	}
	for {
		res, err := s.backend.Nack(s.hard, p)
		if err == nil {
			r.ok()
			if res.DeadLettered > 0 {
				s.logger.Info("relq: dead-lettered deliveries", watermill.LogFields{"count": res.DeadLettered})
			}
			if res.Stale > 0 {
				s.logger.Debug("relq: ignored nacks of deliveries no longer held", watermill.LogFields{"stale": res.Stale})
			}
			break
		}
		if permanent(err) || !sleep(r.failed(err), s.hard.Done()) {
			s.logger.Error("relq: giving up nacking; the leases will expire and the messages be redelivered",
				err, watermill.LogFields{"count": len(items)})
			break
		}
	}
	for _, it := range items {
		s.held.forget(Held{ID: it.ID, Attempt: it.Attempt})
	}
}
