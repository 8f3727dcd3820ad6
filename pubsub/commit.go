package pubsub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// Group commit: concurrent Publish calls on one topic share Backend.Publish calls.
//
// Each topic with work has one leader: the call that sends the topic's next Backend.Publish.
// A call that finds no leader becomes it and sends at once, so an idle publisher adds no
// latency and there is no timer. A call that finds one queues its validated messages and
// waits. A leader starts the round trip on a goroutine of its own and then waits for its
// outcome like any other call; when the round trip returns, that goroutine gives each call of
// the flush its outcome and makes the first call still queued the next leader, which sends
// everything queued (up to the bounds below) in one call. A leader sends one flush only, so no
// Publish waits for more than the flush in flight and its own.
//
// One flush per topic is in flight at a time and the queue is in call order, so the messages
// of a call are contiguous in the topic and calls are stored in the order they queued.

// Bounds of one coalesced Backend.Publish call, so that no script handles an unbounded batch
// (DESIGN §7): queued calls beyond them go in later calls. The messages of one Publish call
// are never split; a call larger than the bounds goes whole, in a call of its own, as before.
const (
	commitMaxMessages = 1000
	commitMaxBytes    = 4 << 20 // encoded size
)

// callState is where a publishCall is; it only moves forward. Guarded by Publisher.mu.
type callState uint8

const (
	callQueued callState = iota // waiting in its topic's queue
	callSent                    // in a flush on its way to Redis
	callDone                    // err is final and done is closed
)

// publishCall is one Publish call that passed validation.
type publishCall struct {
	ctx   context.Context
	msgs  []backend.OutMessage
	bytes int // encoded size of msgs

	// Guarded by Publisher.mu.
	state callState
	leads bool // this call sends its topic's next flush
	err   error

	lead chan struct{} // cap 1, for a call that queued: signalled when it is made leader
	done chan struct{} // closed when state becomes callDone
}

// topicQueue is a topic that has a leader. It is in Publisher.topics exactly as long as it
// has one.
type topicQueue struct {
	calls []*publishCall // queued, in call order; the head is the designated leader if any
}

// enqueue queues c on topic and reports whether c leads (nothing is in flight). It counts c
// for Close, which waits for every call accepted here.
func (p *Publisher) enqueue(topic string, c *publishCall) (leads bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false, backend.ErrClosed
	}
	q, ok := p.topics[topic]
	if !ok {
		q = &topicQueue{}
		p.topics[topic] = q
		c.leads = true
	} else {
		c.lead = make(chan struct{}, 1)
	}
	q.calls = append(q.calls, c)
	p.calls.Add(1)
	return c.leads, nil
}

// await waits for c's outcome, sending a flush when c is made leader. When c's context ends
// first, c leaves the queue if it is still there (its messages are never sent).
func (p *Publisher) await(topic string, c *publishCall) error {
	for {
		select {
		case <-c.done:
			return c.err
		case <-c.lead:
			p.flush(topic, c)
		case <-c.ctx.Done():
			return p.abandon(topic, c)
		}
	}
}

// flush starts the topic's next flush, which c leads as the head of the queue: the round trip
// runs on a goroutine of its own, which hands each call of it its outcome and passes the lead
// on, so that c waits for its outcome like any other call and can give up when its context
// ends (Close waits for that goroutine).
func (p *Publisher) flush(topic string, c *publishCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.topics[topic]
	if err := c.ctx.Err(); err != nil {
		// c gave up before sending: the next call leads, and c returns at once.
		p.drop(q, c, publishError(topic, c, err))
		p.handoff(topic, q)
		return
	}
	batch, n := p.take(topic, q)
	p.sends.Add(1)
	go func() {
		defer p.sends.Done()
		var publishErr, waitErr error
		if len(batch) > 0 {
			publishErr, waitErr = p.send(topic, batch, n)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, b := range batch {
			err := waitErr
			if publishErr != nil {
				err = publishError(topic, b, publishErr)
			}
			p.finish(b, err)
		}
		p.handoff(topic, q)
	}()
}

// take removes from q the calls of the next flush: from the head, in call order, up to the
// bounds, and at least one. Calls whose context has ended are dropped on the way.
func (p *Publisher) take(topic string, q *topicQueue) (batch []*publishCall, n int) {
	size, i := 0, 0
	for ; i < len(q.calls); i++ {
		c := q.calls[i]
		if err := c.ctx.Err(); err != nil {
			p.finish(c, publishError(topic, c, err))
			continue
		}
		if len(batch) > 0 && (n+len(c.msgs) > p.maxMessages || size+c.bytes > p.maxBytes) {
			break
		}
		c.state = callSent
		batch = append(batch, c)
		n += len(c.msgs)
		size += c.bytes
	}
	clear(q.calls[:i])
	q.calls = q.calls[i:]
	return batch, n
}

// send stores the calls of batch in one Backend.Publish call and, with WaitReplicas, waits
// once for the replicas to acknowledge all of it.
func (p *Publisher) send(topic string, batch []*publishCall, n int) (publishErr, waitErr error) {
	msgs := batch[0].msgs
	if len(batch) > 1 {
		msgs = make([]backend.OutMessage, 0, n)
		for _, c := range batch {
			msgs = append(msgs, c.msgs...)
		}
	}
	ctx, stop := commitContext(batch)
	defer stop()
	res, err := p.backend.Publish(ctx, &backend.PublishParams{Topic: topic, Messages: msgs})
	if len(res.Reregistered) > 0 { // said even when the publish failed afterwards
		p.logger.Error("relq: the topic's groups vanished from Redis without a delete; this publisher registered them again from what it knew of them", backend.ErrGroupLost,
			watermill.LogFields{"topic": topic, "groups": strings.Join(res.Reregistered, ",")})
	}
	if err != nil {
		return err, nil
	}
	p.drops.add(topic, res.BacklogDropped)
	p.logger.Trace("relq: published", watermill.LogFields{"topic": topic, "count": n, "calls": len(batch)})
	if p.waiter == nil {
		return nil, nil
	}
	got, err := p.waiter.WaitReplicas(ctx, topic, p.config.WaitReplicas, p.config.WaitTimeout)
	if err != nil {
		return nil, fmt.Errorf("relq: wait for %d replica(s) after publishing to %q: %w", p.config.WaitReplicas, topic, err)
	}
	if got < p.config.WaitReplicas {
		return nil, fmt.Errorf("%w: %d of %d replica(s) within %s", ErrNotReplicated, got, p.config.WaitReplicas, p.config.WaitTimeout)
	}
	return nil, nil
}

// commitContext is the context of a flush of several calls: no one caller's context cancels
// it, since the others still wait for its outcome. It keeps the leader's values, ends at the
// latest of the callers' deadlines when each has one, and is cancelled once every caller has
// given up. The flush of a single call runs under that call's own context.
func commitContext(batch []*publishCall) (context.Context, func()) {
	if len(batch) == 1 {
		return batch[0].ctx, func() {}
	}
	ctx := context.WithoutCancel(batch[0].ctx)
	cancelDeadline := context.CancelFunc(func() {})
	if d, ok := latestDeadline(batch); ok {
		ctx, cancelDeadline = context.WithDeadline(ctx, d)
	}
	ctx, cancel := context.WithCancel(ctx)
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, c := range batch {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
		cancelDeadline()
	}
}

// latestDeadline returns the latest deadline of the calls' contexts, if every one has one.
func latestDeadline(batch []*publishCall) (time.Time, bool) {
	var latest time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			return time.Time{}, false
		}
		if d.After(latest) {
			latest = d
		}
	}
	return latest, true
}

// abandon ends the wait of a call whose context ended before its outcome was known. A queued
// call leaves the queue (passing the lead on if it had it); a call already sent may still be
// stored, and its flush goes on for the other calls in it.
func (p *Publisher) abandon(topic string, c *publishCall) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch c.state {
	case callQueued:
		q := p.topics[topic]
		p.drop(q, c, publishError(topic, c, c.ctx.Err()))
		if c.leads {
			p.handoff(topic, q)
		}
	case callSent:
		return fmt.Errorf("relq: publish %d message(s) to %q: %w (already sent: they may be stored)",
			len(c.msgs), topic, c.ctx.Err())
	}
	return c.err
}

// drop removes a queued call from q and ends it with err.
func (p *Publisher) drop(q *topicQueue, c *publishCall, err error) {
	if i := slices.Index(q.calls, c); i >= 0 {
		q.calls = slices.Delete(q.calls, i, i+1)
	}
	p.finish(c, err)
}

// finish gives c its outcome.
func (p *Publisher) finish(c *publishCall, err error) {
	if c.state == callDone {
		return
	}
	c.state = callDone
	c.err = err
	close(c.done)
}

// handoff makes the first queued call of topic lead its next flush, or forgets the topic
// when nothing is queued. The caller is the leader that is done, holding p.mu.
func (p *Publisher) handoff(topic string, q *topicQueue) {
	if len(q.calls) == 0 {
		delete(p.topics, topic)
		return
	}
	next := q.calls[0]
	next.leads = true
	next.lead <- struct{}{} // never blocks: a call is made leader at most once
}

// publishError is how a call reports the failure of the flush that carried it, or of its
// own context.
func publishError(topic string, c *publishCall, err error) error {
	return fmt.Errorf("relq: publish %d message(s) to %q: %w", len(c.msgs), topic, err)
}
