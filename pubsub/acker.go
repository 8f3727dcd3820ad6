package pubsub

import (
	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// ack is the acker goroutine. Workers queue their results in the heldSet and wake it; it
// takes everything queued and sends it in Ack and Nack calls of at most AckBatch items each,
// then takes whatever accumulated while those calls were in flight. There is no timer and no
// minimum batch: an idle subscription acks at once, a busy one batches as much as one round
// trip allows.
//
// It runs until ackerQuit is closed (no worker or claimer is left) and the queue is empty,
// so the stop flushes every result; a call that fails is retried until it succeeds or hard
// is cancelled (CloseTimeout passed), after which the leases of what is left just expire.
// Acks go first: a nack or release waiting behind them costs nothing but a little latency.
func (s *subscription) ack() {
	defer s.ackerWG.Done()
	acks := &settler[backend.Held]{what: "acking", size: newCallSize(s.config.AckBatch),
		retry: newRetrier("acking", s.config, s.logger), call: s.ackCall, done: s.forget}
	nacks := &settler[backend.NackItem]{what: "nacking", size: newCallSize(s.config.AckBatch),
		retry: newRetrier("nacking", s.config, s.logger), call: s.nackCall, done: s.forgetNacks}
	quitting := false
	for {
		if !quitting {
			select {
			case <-s.ackerWake:
			case <-s.ackerQuit:
				quitting = true
			}
		}
		queuedAcks, queuedNacks := s.held.queued()
		if len(queuedAcks) == 0 && len(queuedNacks) == 0 {
			if quitting {
				return
			}
			continue
		}
		acks.send(s, queuedAcks)
		nacks.send(s, queuedNacks)
	}
}

// settler sends one kind of result (acks or nacks) to the backend.
type settler[T any] struct {
	what  string
	size  *callSize
	retry *retrier
	call  func([]T) error // one Backend call
	done  func([]T)       // the items are no longer held: sent, or given up
}

// send sends items in calls of at most size.next items, each retried until it succeeds:
//
//   - a call that the Redis client timed out (ReadTimeout) is split: its first half is sent
//     at once, and later calls carry no more until calls succeed again (callSize). The call
//     may have run in Redis all the same; sending it again is safe, since acks are idempotent
//     and a nack applies only to the attempt still held (fencing);
//   - other failures, and a timeout of a single item, are retried with backoff;
//   - an error that retrying cannot fix (permanent), or hard cancelled, gives up on what is
//     left, whose leases then expire, rather than holding up every later result.
func (st *settler[T]) send(s *subscription, items []T) {
	for len(items) > 0 {
		n := st.size.next(len(items))
		err := st.call(items[:n])
		switch {
		case err == nil:
			st.retry.ok()
			wasFull := st.size.full()
			st.size.ok(n)
			if !wasFull && st.size.full() {
				s.logger.Info("relq: "+st.what+" in full batches again", watermill.LogFields{"batch": st.size.max})
			}
			st.done(items[:n])
			items = items[n:]
		case n > 1 && !permanent(err) && clientTimeout(err):
			if st.size.full() {
				s.logger.Info("relq: "+st.what+" calls timed out on the Redis client (ReadTimeout); sending smaller batches",
					watermill.LogFields{"batch": n, "error": err.Error()})
			}
			st.size.timedOut(n)
		case permanent(err) || !sleep(st.retry.failed(err), s.hard.Done()):
			s.logger.Error("relq: giving up "+st.what+"; the leases will expire and the messages be redelivered",
				err, watermill.LogFields{"count": len(items)})
			st.done(items)
			return
		}
	}
}

// ackCall acks one batch.
func (s *subscription) ackCall(items []backend.Held) error {
	res, err := s.backend.Ack(s.hard, &backend.AckParams{
		Topic: s.topic, Group: s.config.Group, Consumer: s.config.Consumer, Items: items,
	})
	if err == nil && res.Stale > 0 {
		s.logger.Info("relq: acked deliveries whose lease had expired; they may have been delivered twice",
			watermill.LogFields{"stale": res.Stale})
	}
	return err
}

// nackCall nacks (or releases, or dead-letters) one batch.
func (s *subscription) nackCall(items []backend.NackItem) error {
	res, err := s.backend.Nack(s.hard, &backend.NackParams{
		Topic: s.topic, Group: s.config.Group, Consumer: s.config.Consumer, Items: items,
		MaxDeliveries: s.config.MaxDeliveries,
	})
	if err != nil {
		return err
	}
	if res.DeadLettered > 0 {
		s.logger.Info("relq: dead-lettered deliveries", watermill.LogFields{"count": res.DeadLettered})
	}
	if res.Stale > 0 {
		s.logger.Debug("relq: ignored nacks of deliveries no longer held", watermill.LogFields{"stale": res.Stale})
	}
	return nil
}

// forget drops acked deliveries from the held set; the claimer may have room again (see
// heldSet.activeCount).
func (s *subscription) forget(items []backend.Held) {
	for _, it := range items {
		s.held.forget(it)
	}
	s.freed()
}

// forgetNacks drops nacked deliveries from the held set.
func (s *subscription) forgetNacks(items []backend.NackItem) {
	for _, it := range items {
		s.held.forget(backend.Held{ID: it.ID, Attempt: it.Attempt})
	}
	s.freed()
}
