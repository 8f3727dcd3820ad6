package pubsub

import (
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// ack is the acker goroutine. Workers queue their results in the heldSet and wake it; it
// takes everything queued and sends it in Ack and Nack calls of at most AckBatch items each,
// then takes whatever accumulated while those calls were in flight. There is no timer and no
// minimum batch: an idle subscription acks at once, a busy one batches as much as one round
// trip allows.
//
// It runs until ackerQuit is closed (no worker or claimer is left) and nothing is left to
// send, so the stop flushes every result; a call that fails is retried until it succeeds or
// hard is cancelled (CloseTimeout passed), after which the leases of what is left just
// expire. Acks go first: a nack or release waiting behind them costs nothing but a little
// latency.
func (s *subscription) ack() {
	defer s.ackerWG.Done()
	acks := &settler[backend.Held]{what: "acking", size: newCallSize(s.config.AckBatch),
		retry: newRetrier("acking", s.config, s.logger), call: s.ackCall, done: s.forget}
	nacks := &settler[backend.NackItem]{what: "nacking", size: newCallSize(s.config.AckBatch),
		retry: newRetrier("nacking", s.config, s.logger), call: s.nackCall, done: s.forgetNacks}
	quit := s.ackerQuit
	for {
		waiting := acks.waiting() || nacks.waiting()
		if quit != nil || waiting {
			var later <-chan time.Time
			var hard <-chan struct{}
			if waiting {
				later = time.After(time.Until(soonest(acks.laterAt, nacks.laterAt)))
				hard = s.hard.Done()
			}
			select {
			case <-s.ackerWake:
			case <-quit:
				quit = nil // no more results can come
			case <-later:
			case <-hard:
				acks.giveUpLater(s)
				nacks.giveUpLater(s)
			}
		}
		queuedAcks, queuedNacks := s.held.queued()
		if len(queuedAcks) == 0 && len(queuedNacks) == 0 && !acks.due() && !nacks.due() {
			if quit == nil && !acks.waiting() && !nacks.waiting() {
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
	// later holds the items of a call that settled only part of them (a partitioned topic
	// with one primary failing), to be sent again from laterAt on: meanwhile later results
	// are sent as they come, so one failed primary holds up only its own partitions.
	later   []T
	laterAt time.Time
}

// send sends items, after those held for later when they are due, in calls of at most
// size.next items, each retried until it succeeds:
//
//   - a call that the Redis client timed out (ReadTimeout) is split: its first half is sent
//     at once, and later calls carry no more until calls succeed again (callSize). The call
//     may have run in Redis all the same; sending it again is safe, since acks are idempotent
//     and a nack applies only to the attempt still held (fencing);
//   - a call that failed on some of its items' partitions (*backend.PartialError) keeps
//     those items for later, after a backoff, and goes on with the rest;
//   - other failures, and a timeout of a single item, are retried with backoff;
//   - an error that retrying cannot fix (permanent), or hard cancelled, gives up on what is
//     left, whose leases then expire, rather than holding up every later result.
func (st *settler[T]) send(s *subscription, items []T) {
	if st.due() {
		items = append(st.later, items...)
		st.later, st.laterAt = nil, time.Time{}
	}
	for len(items) > 0 {
		n := st.size.next(len(items))
		err := st.call(items[:n])
		var pe *backend.PartialError
		switch {
		case err == nil:
			if len(st.later) == 0 { // not recovered while items wait for a failing partition
				st.retry.ok()
			}
			wasFull := st.size.full()
			st.size.ok(n)
			if !wasFull && st.size.full() {
				s.logger.Info("relq: "+st.what+" in full batches again", watermill.LogFields{"batch": st.size.max})
			}
			st.done(items[:n])
			items = items[n:]
		case errors.As(err, &pe) && len(pe.Failed) > 0 && len(pe.Failed) <= n:
			done, again := split(items[:n], pe.Failed)
			st.done(done)
			items = items[n:]
			if permanent(pe.Err) {
				st.giveUp(s, pe.Err, again)
				continue
			}
			st.later = append(st.later, again...)
			if st.laterAt.IsZero() {
				st.laterAt = time.Now().Add(st.retry.failed(pe.Err))
			}
		case n > 1 && !permanent(err) && clientTimeout(err):
			if st.size.full() {
				s.logger.Info("relq: "+st.what+" calls timed out on the Redis client (ReadTimeout); sending smaller batches",
					watermill.LogFields{"batch": n, "error": err.Error()})
			}
			st.size.timedOut(n)
		case permanent(err) || !sleep(st.retry.failed(err), s.hard.Done()):
			st.giveUp(s, err, items)
			return
		}
	}
}

// waiting reports items held for later; due, that their time came.
func (st *settler[T]) waiting() bool { return len(st.later) > 0 }

func (st *settler[T]) due() bool {
	return len(st.later) > 0 && !time.Now().Before(st.laterAt)
}

// soonest returns the earliest of the times that are set.
func soonest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if !t.IsZero() && (out.IsZero() || t.Before(out)) {
			out = t
		}
	}
	return out
}

// giveUp drops items, whose leases then expire and whose messages are redelivered: an error
// that retrying cannot fix, or the stop's CloseTimeout passed.
func (st *settler[T]) giveUp(s *subscription, err error, items []T) {
	s.logger.Error("relq: giving up "+st.what+"; the leases will expire and the messages be redelivered",
		err, watermill.LogFields{"count": len(items)})
	st.done(items)
}

// giveUpLater gives up on the items held for later.
func (st *settler[T]) giveUpLater(s *subscription) {
	if len(st.later) > 0 {
		st.giveUp(s, s.hard.Err(), st.later)
	}
	st.later, st.laterAt = nil, time.Time{}
}

// split divides a call's items into those settled and those listed in failed (indexes).
func split[T any](items []T, failed []int) (done, again []T) {
	bad := make(map[int]bool, len(failed))
	for _, j := range failed {
		bad[j] = true
	}
	for j, it := range items {
		if bad[j] {
			again = append(again, it)
		} else {
			done = append(done, it)
		}
	}
	return done, again
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
