package pubsub

import (
	"context"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// warnEviction logs at error level, once per Subscriber, a Redis eviction policy that can
// delete queue keys: nothing else would tell, since evicted messages vanish without an
// error. A policy that cannot be read (no EvictionReader, INFO refused) is left unknown.
func (s *Subscriber) warnEviction(ctx context.Context) {
	r, ok := s.backend.(backend.EvictionReader)
	if !ok {
		return
	}
	ev, err := r.Eviction(ctx)
	if err != nil {
		s.logger.Debug("relq: could not read Redis's eviction policy", watermill.LogFields{"err": err})
		return
	}
	if err := ev.Err(); err != nil {
		s.logger.Error("relq: Redis can evict queue keys", err, watermill.LogFields{"maxmemory_policy": ev.Policy})
	}
}
