package streams

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/relq/relq/internal/backendkit"
)

// idleProbe is how often an idle consumer runs claim.lua at the start of a Claim; in between,
// its Claims go straight to the XREAD, which whatever becomes claimable wakes.
const idleProbe = backendkit.IdleProbe

// idleConsumers remembers, per consumer whose last claim.lua found nothing, what its next
// Claims need to go straight to the XREAD: one entry per idle consumer, dropped when it
// claims something, when its Claim ends with its context (the subscription ended), or once no
// Claim used it for idleStale (a subscription that ended between two Claims).
type idleConsumers struct {
	m     sync.Map     // idleKey -> idleState
	swept atomic.Int64 // when store last dropped stale entries, in Unix ns
}

// idleStale is how long an entry may go unused before store drops it. A consumer whose
// Claims go on uses its entry at least once a probe; one without an entry only runs
// claim.lua at its next Claim, as after a claim that took something.
const idleStale = 10 * idleProbe

type idleKey struct{ topic, group, consumer string }

type idleState struct {
	probed time.Time // when claim.lua last found nothing; zero: the next Claim runs it
	due    time.Time // when the earliest retry it reported is due; zero: none
	last   string    // the stream position to XREAD after
	fresh  bool      // no entry of the stream ended a wait since claim.lua returned last
	wake   string    // the wake-up stream's position to XREAD after; "": unknown
	used   time.Time // when a Claim last stored it
}

// skips reports whether a Claim at now may go straight to the XREAD: the probe is not due
// (idleProbe after the last claim.lua) and no retry it knows of is due.
func (s idleState) skips(now time.Time) bool {
	return !s.probed.IsZero() && now.Before(s.probed.Add(idleProbe)) && (s.due.IsZero() || now.Before(s.due))
}

func (i *idleConsumers) load(k idleKey) (idleState, bool) {
	v, ok := i.m.Load(k)
	if !ok {
		return idleState{}, false
	}
	return v.(idleState), true
}

// store records s for k, and drops the entries no Claim used for idleStale, at most once per
// idleStale: a pass over the entries of live consumers.
func (i *idleConsumers) store(k idleKey, s idleState) {
	now := time.Now()
	s.used = now
	i.m.Store(k, s)
	last := i.swept.Load()
	if now.UnixNano()-last < int64(idleStale) || !i.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	i.m.Range(func(key, v any) bool {
		if now.Sub(v.(idleState).used) >= idleStale {
			i.m.CompareAndDelete(key, v)
		}
		return true
	})
}

func (i *idleConsumers) forget(k idleKey) { i.m.Delete(k) }
