package pubsub

import (
	"context"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
)

// work is one worker goroutine: it keeps one message in flight at a time, so Concurrency
// workers bound the handlers running for this subscription.
func (s *subscription) work() {
	defer s.workersWG.Done()
	for {
		var d backend.Delivery
		select {
		case d = <-s.buffer:
		case <-s.stopping:
			return
		}
		if !s.held.take(d) {
			s.freed() // lost while buffered: another consumer may have it now
			continue
		}
		if len(s.buffer) == 0 {
			s.freed() // the claimer waits for half the capacity only while the buffer has some
		}
		s.deliver(d)
	}
}

// deliver sends one delivery on the output channel and settles it with the handler's
// verdict. A delivery that never reached a handler (the stop began first, even while the
// channel was not being read) is released: back to ready at once, no attempt counted.
func (s *subscription) deliver(d backend.Delivery) {
	if s.isStopping() {
		s.settle(release(d))
		return
	}
	msg, done := s.newMessage(d)
	defer done()
	select {
	case s.out <- msg:
	case <-s.stopping:
		s.settle(release(d))
		return
	}
	select {
	case <-msg.Acked():
		s.settleAck(d)
	case <-msg.Nacked():
		s.settle(s.nackItem(msg, d))
	case <-s.hard.Done():
		// CloseTimeout passed during the stop: stop extending the lease, which then expires
		// and the message is redelivered.
		s.logger.Info("relq: handler did not ack or nack within CloseTimeout; its lease will expire",
			watermill.LogFields{"delivery_id": d.ID, "message_uuid": msg.UUID})
		s.held.forget(key(d))
		s.freed()
	}
}

// newMessage builds the Watermill message of a delivery. Its context derives from
// Subscribe's ctx and is cancelled once the message is acked or nacked (Watermill's
// contract) or the subscription stops.
func (s *subscription) newMessage(d backend.Delivery) (*message.Message, context.CancelFunc) {
	msg := message.NewMessage(d.Envelope.UUID, d.Envelope.Payload)
	for k, v := range d.Envelope.Metadata {
		msg.Metadata[k] = v
	}
	delete(msg.Metadata, MetadataNackDelayMs) // only the handler of this delivery sets these
	delete(msg.Metadata, MetadataNackReason)
	msg.Metadata[MetadataDeliveryID] = d.ID
	msg.Metadata[MetadataAttempt] = strconv.Itoa(d.Attempt)
	msg.Metadata[MetadataTopic] = s.topic
	msg.Metadata[MetadataGroup] = s.config.Group
	ctx, cancel := context.WithCancel(s.msgCtx)
	msg.SetContext(ctx)
	return msg, cancel
}

// nackItem is the Nack of a delivery the handler nacked. A delay beyond MaxDelay cannot be
// kept and must not be cut short, so the message goes to the dead-letter store with the
// *DelayError as its reason (and the handler's, if it set one).
func (s *subscription) nackItem(msg *message.Message, d backend.Delivery) backend.NackItem {
	item := backend.NackItem{ID: d.ID, Attempt: d.Attempt, Reason: nackReason(msg)}
	delay, err := s.nackDelay(msg, d.Attempt)
	if err == nil {
		item.Delay = delay
		return item
	}
	s.logger.Error("relq: nack delay beyond MaxDelay; dead-lettering the message", err,
		watermill.LogFields{"message_uuid": msg.UUID, "delivery_id": d.ID})
	if item.Reason != "" {
		item.Reason = err.Error() + "; " + item.Reason
	} else {
		item.Reason = err.Error()
	}
	item.DeadLetter = true
	return item
}

// nackDelay is the per-message delay the handler set with SetNackDelay, else the
// configured backoff for this attempt; a *DelayError when it is beyond MaxDelay.
func (s *subscription) nackDelay(msg *message.Message, attempt int) (time.Duration, error) {
	if v := msg.Metadata.Get(MetadataNackDelayMs); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			d, ok := msDelay(ms)
			if !ok {
				return 0, &backend.DelayError{UUID: msg.UUID, Key: MetadataNackDelayMs, Value: v}
			}
			return d, nil
		}
		s.logger.Error("relq: ignoring a bad "+MetadataNackDelayMs, err, watermill.LogFields{"message_uuid": msg.UUID})
	}
	d := s.config.NackBackoff(attempt)
	if d > MaxDelay {
		return 0, &backend.DelayError{UUID: msg.UUID, Key: "NackBackoff", Value: d.String()}
	}
	return max(d, 0), nil
}
