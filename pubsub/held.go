package pubsub

import (
	"sync"

	"github.com/relq/relq/backend"
)

type heldState uint8

const (
	stateBuffered heldState = iota // claimed, waiting in the buffer for a worker
	stateHandling                  // with a worker: being sent or handled
	stateSettling                  // acked or nacked, waiting for the acker's call
)

type heldEntry struct {
	state heldState
	lost  bool // Extend said another consumer may have it now
}

// heldSet tracks every delivery a subscription holds a lease on, from its claim until the
// acker's call for it succeeds, so the heartbeat extends them all (including acks still on
// their way, so that an ack delayed by a Redis hiccup does not turn into a redelivery), and
// so the claimer knows its free capacity. It also queues the acker's work.
//
// Entries are keyed by delivery ID and attempt: a message nacked without delay can be claimed
// again by this same subscription before the acker has forgotten the nacked attempt, and an
// expired lease can come back to it while its handler still runs. Each attempt is its own
// delivery, with its own lease.
type heldSet struct {
	mu      sync.Mutex
	entries map[backend.Held]*heldEntry
	active  int // buffered or handling: what counts against Concurrency+Prefetch
	waiting int // settling: acked or nacked, until the acker's call for it succeeds
	backlog int // settling entries beyond this count against the capacity too
	acks    []backend.Held
	nacks   []backend.NackItem
}

// init prepares the set; backlog is AckBatch.
func (h *heldSet) init(backlog int) {
	h.entries = make(map[backend.Held]*heldEntry)
	h.backlog = backlog
}

func key(d backend.Delivery) backend.Held { return backend.Held{ID: d.ID, Attempt: d.Attempt} }

// add registers a claimed delivery as buffered.
func (h *heldSet) add(d backend.Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries[key(d)] = &heldEntry{state: stateBuffered}
	h.active++
}

// activeCount returns how many deliveries count against the capacity: those buffered or
// with a handler, and the results waiting for the acker beyond one full batch. So while acks
// lag (Redis slow, calls timing out and being split), the subscription stops claiming work it
// cannot settle, and what it holds, and the heartbeat extends, stays bounded.
func (h *heldSet) activeCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.active + max(0, h.waiting-h.backlog)
}

// take moves a buffered delivery to a worker. It returns false, and forgets the delivery,
// when its lease was lost while it waited in the buffer.
func (h *heldSet) take(d backend.Delivery) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries[key(d)]
	if !ok {
		return false
	}
	if e.lost {
		h.remove(key(d), e)
		return false
	}
	e.state = stateHandling
	return true
}

// settleAck queues an ack for the acker.
func (h *heldSet) settleAck(d backend.Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.settling(key(d))
	h.acks = append(h.acks, key(d))
}

// settleNack queues a nack (retry, release or dead letter) for the acker. A delivery not
// seen before (a corrupt entry, never buffered) is registered as settling, so the heartbeat
// keeps its lease meanwhile.
func (h *heldSet) settleNack(item backend.NackItem) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.settling(backend.Held{ID: item.ID, Attempt: item.Attempt})
	h.nacks = append(h.nacks, item)
}

func (h *heldSet) settling(k backend.Held) {
	e, ok := h.entries[k]
	switch {
	case !ok:
		h.entries[k] = &heldEntry{state: stateSettling}
	case e.state == stateSettling:
		return // settled twice: counted once
	default:
		h.active--
		e.state = stateSettling
	}
	h.waiting++
}

// queued takes the acks and nacks queued since the last call.
func (h *heldSet) queued() ([]backend.Held, []backend.NackItem) {
	h.mu.Lock()
	defer h.mu.Unlock()
	acks, nacks := h.acks, h.nacks
	h.acks, h.nacks = nil, nil
	return acks, nacks
}

// forget drops a delivery that is no longer held: its ack or nack went through, or the
// subscription gave up on it and lets its lease expire.
func (h *heldSet) forget(k backend.Held) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.entries[k]; ok {
		h.remove(k, e)
	}
}

func (h *heldSet) remove(k backend.Held, e *heldEntry) {
	if e.state == stateSettling {
		h.waiting--
	} else {
		h.active--
	}
	delete(h.entries, k)
}

// leases returns the deliveries whose leases the heartbeat extends.
func (h *heldSet) leases() []backend.Held {
	h.mu.Lock()
	defer h.mu.Unlock()
	items := make([]backend.Held, 0, len(h.entries))
	for k, e := range h.entries {
		if !e.lost {
			items = append(items, k)
		}
	}
	return items
}

// markLost records deliveries whose lease Extend could not push: buffered ones are dropped
// when a worker reaches them (another consumer may have them now). It returns the IDs that a
// handler is working on, which can only be logged: the handler's ack still removes the
// message (acks are accepted from any holder), its nack is ignored.
//
// Extend names lost deliveries by ID only; where this subscription holds two attempts of one
// ID, the newest is the one it can still hold, so only older attempts are marked.
func (h *heldSet) markLost(ids []string) (handling []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	type attempts struct{ newest, count int }
	lost := make(map[string]*attempts, len(ids))
	for _, id := range ids {
		lost[id] = &attempts{}
	}
	for k := range h.entries {
		if a, ok := lost[k.ID]; ok {
			a.newest, a.count = max(a.newest, k.Attempt), a.count+1
		}
	}
	for k, e := range h.entries {
		a, ok := lost[k.ID]
		if !ok || e.state == stateSettling || (a.count > 1 && k.Attempt == a.newest) {
			continue // settled already or on its way; or the attempt still held
		}
		e.lost = true
		if e.state == stateHandling {
			handling = append(handling, k.ID)
		}
	}
	return handling
}
