package streams

import (
	"sync"
	"time"

	"github.com/relq/relq/internal/backendkit"
)

// idleProbe is how often an idle consumer runs claim.lua at the start of a Claim; in between,
// its Claims go straight to the XREAD, which whatever becomes claimable wakes.
const idleProbe = backendkit.IdleProbe

// idleConsumers remembers, per consumer whose last claim.lua found nothing, what its next
// Claims need to go straight to the XREAD: one entry per idle consumer, dropped when it
// claims something.
type idleConsumers struct {
	m sync.Map // idleKey -> idleState
}

type idleKey struct{ topic, group, consumer string }

type idleState struct {
	probed time.Time // when claim.lua last found nothing; zero: the next Claim runs it
	due    time.Time // when the earliest retry it reported is due; zero: none
	last   string    // the stream position to XREAD after
	fresh  bool      // no entry of the stream ended a wait since claim.lua returned last
	wake   string    // the wake-up stream's position to XREAD after; "": unknown
	// indexed is when claim.lua last put the consumer in the group's quiet index; the next
	// one does again after half the quiet period (see Options.ConsumerIdleTimeout).
	indexed time.Time
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

func (i *idleConsumers) store(k idleKey, s idleState) { i.m.Store(k, s) }

func (i *idleConsumers) forget(k idleKey) { i.m.Delete(k) }
