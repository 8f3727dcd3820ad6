package pubsub

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// The eviction check reads Redis's eviction policy once per Subscriber, after its first group
// registration (Redis answered then), on a goroutine of its own: no Subscribe waits for it,
// and no caller's context ends it. Close does, and waits for it.
const (
	// evictionTries bounds the reads of a policy that Redis did not answer (a connection
	// error, a timeout); a refusal by ACLs is an answer, and final.
	evictionTries = 3
	// evictionTimeout bounds each read.
	evictionTimeout = 5 * time.Second
	// evictionBackoff is the wait after the first failed read, doubled after each next one.
	evictionBackoff = 500 * time.Millisecond
)

// checkEviction starts warnEviction unless it started already or the Subscriber closed.
func (s *Subscriber) checkEviction() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.evictionChecked {
		return
	}
	s.evictionChecked = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.warnEviction()
	}()
}

// warnEviction logs at error level a Redis eviction policy that can delete queue keys:
// nothing else would tell, since evicted messages vanish without an error. A policy that
// cannot be read (no EvictionReader, INFO refused) is left unknown; one Redis did not answer
// is read again, evictionTries times at most, until Close.
func (s *Subscriber) warnEviction() {
	r, ok := s.backend.(backend.EvictionReader)
	if !ok {
		return
	}
	wait := evictionBackoff
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(s.alive, evictionTimeout)
		ev, err := r.Eviction(ctx)
		cancel()
		if err == nil {
			s.logger.Debug("relq: Redis's eviction policy read", watermill.LogFields{"maxmemory_policy": ev.Policy})
			if err := ev.Err(); err != nil {
				s.logger.Error("relq: Redis can evict queue keys", err, watermill.LogFields{"maxmemory_policy": ev.Policy})
			}
			return
		}
		if s.alive.Err() != nil {
			return
		}
		if try == evictionTries {
			s.logger.Info("relq: could not read Redis's eviction policy; it is not checked",
				watermill.LogFields{"tries": try, "error": err.Error()})
			return
		}
		s.logger.Debug("relq: could not read Redis's eviction policy; trying again",
			watermill.LogFields{"try": try, "error": err.Error(), "wait": wait.String()})
		if !sleep(wait, s.alive.Done()) {
			return
		}
		wait *= 2
	}
}
