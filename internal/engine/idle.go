package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/relq/relq/internal/backendkit"
)

// IdleProbe is how often an idle consumer runs the claim script at the start of a Claim. In
// between, a Claim goes straight to its blocking wait: whatever a publish, nack or reclaim makes
// ready wakes that wait anyway (list: BLMOVE on ready; zset: a wake-up token, pushed while the
// group is marked asleep for IdleProbe + Block). A delayed message scheduled meanwhile, by any
// process, wakes a consumer too while the group is marked asleep (zset's token, list's wake-up
// entry), so that it learns the new due time; should that wake-up be lost, the probe and the
// reclaim loop, which wakes at the earliest due time it knows, bound how late it is promoted.
const IdleProbe = backendkit.IdleProbe

// Idle remembers which consumers found nothing at their last claim, so their next Claims can
// skip the claim script until IdleProbe passes or a due time they know of comes. One entry per
// consumer that was idle within the last IdleProbe: a consumer name lives as long as its
// subscription, so an entry is forgotten when its consumer leaves (Forget), when its Claim is
// cancelled, and otherwise once it is older than IdleProbe, when it can skip nothing any more
// (a sweep, at most once per IdleProbe). The zero value is ready to use.
type Idle struct {
	m     sync.Map     // idleKey -> idleState
	swept atomic.Int64 // when the last sweep began (unix ns)
}

type idleKey struct{ topic, group, consumer string }

type idleState struct {
	probed time.Time // when the claim script last ran and found nothing
	due    time.Time // when the earliest scheduled message it reported is due; zero: none
}

// Skip reports whether a Claim of consumer may go straight to its blocking wait: for at most
// left (until the next probe), with the earliest scheduled message due in dueIn (-1: none
// known). It is false once a known due time has come.
func (i *Idle) Skip(topic, group, consumer string) (left, dueIn time.Duration, ok bool) {
	v, found := i.m.Load(idleKey{topic, group, consumer})
	if !found {
		return 0, -1, false
	}
	s := v.(idleState)
	left, dueIn = time.Until(s.probed.Add(IdleProbe)), -1
	if !s.due.IsZero() {
		dueIn = time.Until(s.due)
		if dueIn <= 0 {
			return 0, -1, false
		}
	}
	return left, dueIn, left > 0
}

// Found records what a claim script reported when it claimed nothing: wait is the time until
// the earliest scheduled message is due, or -1.
func (i *Idle) Found(topic, group, consumer string, wait time.Duration) {
	s := idleState{probed: time.Now()}
	if wait >= 0 {
		s.due = s.probed.Add(wait)
	}
	i.m.Store(idleKey{topic, group, consumer}, s)
	i.sweep(s.probed)
}

// Forget drops consumer's idle state: it claimed something, was woken, or its subscription
// ended.
func (i *Idle) Forget(topic, group, consumer string) {
	i.m.Delete(idleKey{topic, group, consumer})
}

// sweep drops the entries that can skip nothing any more (Skip is false once IdleProbe
// passed), at most once per IdleProbe: those of consumers whose subscription ended between
// two Claims, which nothing else would forget. The entries are at most those of one
// IdleProbe's idle consumers, so its cost per Found stays constant on average.
func (i *Idle) sweep(now time.Time) {
	last := i.swept.Load()
	if now.UnixNano()-last < int64(IdleProbe) || !i.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	i.m.Range(func(k, v any) bool {
		if now.Sub(v.(idleState).probed) >= IdleProbe {
			i.m.CompareAndDelete(k, v) // not one a Found stored meanwhile
		}
		return true
	})
}
