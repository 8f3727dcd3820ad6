package pubsub

import (
	"errors"
	"strings"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// A subscription's group can vanish from Redis without anyone deleting it (see
// TombstoneTTLDefault: vanished is not deleted). Its claims, or an ephemeral membership's
// renewal, then fail with ErrGroupLost, and the subscription registers the group again
// (Backend.RegisterAgain) and goes on claiming: what was published meanwhile waits in the
// topic's backlog, which the first group registered takes. Only a tombstone, an operator's
// delete, stops it (ErrGroupDeleted).

// regain registers the group again after cause (an error matching ErrGroupLost). It retries
// Redis failures with backoff until it succeeds, the stop begins, or the group turns out
// deleted, or cannot be registered as this subscription's (a durable group of an ephemeral
// one's name): the subscription then stops. One regain runs at a time (the claimer's and the
// membership's may meet); the second finds the group registered. It reports whether the
// subscription goes on.
func (s *subscription) regain(cause error) bool {
	s.regainMu.Lock()
	defer s.regainMu.Unlock()
	r := newRetrier("registering the vanished group again", s.config, s.logger)
	for {
		p := &backend.RegisterAgainParams{Topic: s.topic, Group: s.config.Group, After: s.lastID(), Known: s.regains}
		if s.ephemeral != nil {
			p.Ephemeral, p.Consumer, p.TTL = true, s.config.Consumer, s.config.EphemeralTTL
		}
		res, err := s.backend.RegisterAgain(s.claimCtx, p)
		switch {
		case err == nil:
			r.ok()
			s.regains = max(s.regains, res.Times)
			if res.Registered {
				s.logger.Error("relq: the subscription's group vanished from Redis without a delete; it is registered again", cause,
					watermill.LogFields{"found": res.Found, "from_backlog": res.Backlog, "reregistrations": res.Times})
			}
			return true
		case s.isStopping():
			return false
		case errors.Is(err, backend.ErrGroupDeleted):
			s.groupDeleted(err)
			return false
		case permanent(err):
			s.goneOnce.Do(func() {
				s.logger.Error("relq: the subscription's group vanished and cannot be registered again; the subscription stops", err, nil)
				close(s.gone)
			})
			return false
		}
		if !sleep(r.failed(err), s.stopping) {
			return false
		}
	}
}

// seen records the delivery IDs of a claim: the latest is where a backend that keeps the
// topic's history (streams) starts a group registered again.
func (s *subscription) seen(ds []backend.Delivery) {
	last := s.lastID()
	for _, d := range ds {
		if laterID(d.ID, last) {
			last = d.ID
		}
	}
	s.last.Store(&last)
}

// lastID is the latest delivery ID the subscription claimed; "" for none.
func (s *subscription) lastID() string {
	if p := s.last.Load(); p != nil {
		return *p
	}
	return ""
}

// laterID reports whether delivery ID a comes after b ("" comes before any): decimal counters
// (list, zset) or "<ms>-<seq>" (streams), compared part by part as numbers.
func laterID(a, b string) bool {
	for a != "" || b != "" {
		x, restA, _ := strings.Cut(a, "-")
		y, restB, _ := strings.Cut(b, "-")
		if c := compareDecimal(x, y); c != 0 {
			return c > 0
		}
		a, b = restA, restB
	}
	return false
}

// compareDecimal compares two decimal numbers without leading zeros by length, then bytes.
func compareDecimal(x, y string) int {
	if len(x) != len(y) {
		if len(x) < len(y) {
			return -1
		}
		return 1
	}
	return strings.Compare(x, y)
}
