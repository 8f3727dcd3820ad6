package pubsub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
)

// subscription is one Subscribe call. Its goroutines:
//
//   - run, the supervisor: starts the others, waits for ctx cancellation or Close, and then
//     shuts them down in order (see stop);
//   - claimer: claims batches of up to the free capacity (Concurrency+Prefetch minus what is
//     held) into buffer, blocking at most Block per claim;
//   - Concurrency workers: each takes one delivery from buffer, sends it on out, and waits
//     for the handler's Ack or Nack;
//   - acker: turns acks, nacks and releases into batched Backend.Ack/Nack calls;
//   - heartbeat: extends the leases of everything held;
//   - reclaimer: returns the group's expired leases to ready, with jitter;
//   - with an ephemeral group, renew: renews the subscription's membership (membership.go).
//
// A group found unregistered without a tombstone is registered again by the loop that found
// it (regain.go); one an operator deleted stops the subscription (membership.go).
//
// All Redis calls take hard, which outlives ctx (the stop still needs Redis to release and
// ack) and is cancelled CloseTimeout after the stop began at the latest: that bounds how long
// Close waits for handlers and for acks while Redis is down. Claims take claimCtx, which
// the stop cancels at once, so that a claim blocked waiting for messages ends then and not
// at the end of Block: a claim cancelled in its wait claims nothing, and what a claim script
// claimed before the cancel is returned all the same, and released.
type subscription struct {
	backend   backend.Backend
	ephemeral backend.Ephemeral // nil for a durable group
	config    SubscriberConfig
	logger    watermill.LoggerAdapter
	topic     string
	ctx       context.Context // Subscribe's ctx: cancelling it stops the subscription
	closing   <-chan struct{} // the Subscriber's: closing it stops every subscription

	out    chan *message.Message
	buffer chan backend.Delivery // claimed, not yet taken by a worker; cap Concurrency+Prefetch

	// msgCtx parents message contexts: cancelled at the stop, so handlers learn of it.
	msgCtx    context.Context
	cancelMsg context.CancelFunc
	// hard bounds Redis calls and the wait for handlers (see above).
	hard       context.Context
	cancelHard context.CancelFunc
	// claimCtx is hard's, cancelled when the stop begins.
	claimCtx    context.Context
	cancelClaim context.CancelFunc
	// stopping is closed when the stop begins: no more claims, no more deliveries.
	stopping chan struct{}
	// gone is closed when the group turned out deleted: the subscription stops.
	gone     chan struct{}
	goneOnce sync.Once
	// leaving is closed when the stop is about to leave an ephemeral group: renew returns.
	leaving chan struct{}
	// last is the latest delivery ID claimed (regain.go), regains the re-registrations of the
	// group known so far; regainMu runs one regain at a time and guards regains.
	last     atomic.Pointer[string]
	regainMu sync.Mutex
	regains  int64

	held      heldSet
	capacity  chan struct{} // cap 1: wakes the claimer when capacity frees
	ackerWake chan struct{} // cap 1: wakes the acker when results wait
	ackerQuit chan struct{} // closed once no more results can come

	claimerWG, workersWG, ackerWG, loopsWG, memberWG sync.WaitGroup
}

func newSubscription(ctx context.Context, s *Subscriber, topic string) *subscription {
	c := s.config
	c.Consumer = subscriptionConsumer(c.Consumer)
	sub := &subscription{
		backend:   s.backend,
		ephemeral: s.ephemeral,
		config:    c,
		logger:    s.logger.With(watermill.LogFields{"topic": topic, "consumer": c.Consumer}),
		topic:     topic,
		ctx:       ctx,
		closing:   s.closing,
		out:       make(chan *message.Message),
		buffer:    make(chan backend.Delivery, c.Concurrency+c.Prefetch),
		stopping:  make(chan struct{}),
		gone:      make(chan struct{}),
		leaving:   make(chan struct{}),
		capacity:  make(chan struct{}, 1),
		ackerWake: make(chan struct{}, 1),
		ackerQuit: make(chan struct{}),
	}
	sub.held.init(c.AckBatch)
	sub.msgCtx, sub.cancelMsg = context.WithCancel(withMaxDeliveries(ctx, c.MaxDeliveries))
	sub.hard, sub.cancelHard = context.WithCancel(context.Background())
	sub.claimCtx, sub.cancelClaim = context.WithCancel(sub.hard)
	return sub
}

// discard frees a subscription that never ran.
func (s *subscription) discard() {
	s.cancelClaim()
	s.cancelHard()
	s.cancelMsg()
}

// run starts the subscription's goroutines and stops them when ctx is cancelled, the
// Subscriber closes, or the group turns out deleted.
func (s *subscription) run() {
	s.assign()
	s.claimerWG.Add(1)
	go s.claim()
	s.workersWG.Add(s.config.Concurrency)
	for range s.config.Concurrency {
		go s.work()
	}
	s.ackerWG.Add(1)
	go s.ack()
	s.loopsWG.Add(2)
	go s.heartbeat()
	go s.reclaim()
	if s.ephemeral != nil {
		s.memberWG.Add(1)
		go s.renew()
	}
	s.logger.Debug("relq: subscribed", nil)

	select {
	case <-s.ctx.Done():
	case <-s.closing:
	case <-s.gone:
	}
	s.stop()
}

// stop shuts the subscription down in the order DESIGN §3 asks for: stop claiming (ending a
// blocked claim) and delivering, release prefetched deliveries at once, give handlers in
// flight up to CloseTimeout, flush the acker, leave an ephemeral group, and only then close
// out, once nothing can send on it.
func (s *subscription) stop() {
	start := time.Now()
	s.cancelMsg()
	close(s.stopping)
	s.cancelClaim()
	deadline := time.AfterFunc(s.config.CloseTimeout, s.cancelHard)
	defer deadline.Stop()

	s.releaseBuffered()
	s.claimerWG.Wait()
	s.releaseBuffered() // anything the claimer pushed while the stop began
	s.workersWG.Wait()
	s.releaseBuffered()
	close(s.ackerQuit)
	s.ackerWG.Wait()
	s.unassign()
	s.leaveGroup()

	s.cancelHard()
	s.loopsWG.Wait()
	close(s.out)
	s.logger.Debug("relq: subscription closed", watermill.LogFields{"took": time.Since(start).String()})
}

// releaseBuffered hands every delivery still in buffer back to ready through the acker.
func (s *subscription) releaseBuffered() {
	for {
		select {
		case d := <-s.buffer:
			if s.held.take(d) {
				s.settle(release(d))
			} else {
				s.freed()
			}
		default:
			return
		}
	}
}

// isStopping reports whether the stop has begun.
func (s *subscription) isStopping() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// settleAck queues an ack of a delivery for the acker.
func (s *subscription) settleAck(d backend.Delivery) {
	s.held.settleAck(d)
	s.freed()
	wake(s.ackerWake)
}

// settle queues a nack (or release, or dead letter) of a delivery for the acker.
func (s *subscription) settle(item backend.NackItem) {
	s.held.settleNack(item)
	s.freed()
	wake(s.ackerWake)
}

// freed tells the claimer that capacity may have freed.
func (s *subscription) freed() { wake(s.capacity) }

func release(d backend.Delivery) backend.NackItem {
	return backend.NackItem{ID: d.ID, Attempt: d.Attempt, Release: true}
}

// wake signals a cap-1 channel without blocking: one pending signal is enough, since the
// woken goroutine looks at the shared state, not at the signal count.
func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
