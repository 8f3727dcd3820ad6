package pubsub

import (
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
)

// outMessage turns a Watermill message into what the backend stores, checking everything
// that can be wrong with it, so that Publish can reject a batch before writing any of it.
// It also returns the encoded size, which bounds a group commit.
//
// Metadata handling:
//   - Delivery keys (MetadataDeliveryID, MetadataAttempt, ...) are dropped: they describe one
//     delivery of a received message, and dropping them lets a handler forward the message it
//     received as it is.
//   - Control keys (MetadataDelayMs, MetadataPriority) are parsed and kept out of the stored
//     envelope: they are instructions for this publish, and keeping them would delay or
//     reprioritise the message again every time it is forwarded.
//   - Any other key with ReservedPrefix is rejected (*MetadataError), to catch typos.
//   - Watermill's delay keys are the user's and stay in the envelope (Watermill apps read
//     them); they set the delay unless MetadataDelayMs is present.
//
// key, when not empty, is the partition key of a message whose metadata sets none
// (PublisherConfig.Key).
func outMessage(msg *message.Message, limit int, now time.Time, key string) (backend.OutMessage, int, error) {
	meta := make(map[string]string, len(msg.Metadata))
	var out backend.OutMessage
	var delayMs, priority string
	for k, v := range msg.Metadata {
		switch {
		case isDeliveryKey(k):
		case k == MetadataDelayMs:
			delayMs = v
		case k == MetadataPriority:
			priority = v
		case k == MetadataKey:
			meta[k] = v
		case isReserved(k):
			return backend.OutMessage{}, 0, &backend.MetadataError{UUID: msg.UUID, Key: k, Reason: "unknown key in relq's reserved " + ReservedPrefix + " namespace"}
		default:
			meta[k] = v
		}
	}
	if priority != "" {
		p, err := strconv.Atoi(priority)
		if err != nil {
			return backend.OutMessage{}, 0, &backend.MetadataError{UUID: msg.UUID, Key: MetadataPriority, Reason: "not an integer: " + strconv.Quote(priority)}
		}
		out.Priority = p
	}
	if delayMs != "" {
		ms, err := strconv.ParseInt(delayMs, 10, 64)
		if err != nil {
			return backend.OutMessage{}, 0, &backend.MetadataError{UUID: msg.UUID, Key: MetadataDelayMs, Reason: "not an integer number of milliseconds: " + strconv.Quote(delayMs)}
		}
		d, ok := msDelay(ms)
		if !ok {
			return backend.OutMessage{}, 0, &backend.DelayError{UUID: msg.UUID, Key: MetadataDelayMs, Value: delayMs}
		}
		out.Delay = d
	} else {
		d, err := watermillDelay(msg, now)
		if err != nil {
			return backend.OutMessage{}, 0, err
		}
		out.Delay = d
	}
	if _, ok := meta[MetadataKey]; !ok && key != "" {
		meta[MetadataKey] = key
	}
	if len(meta) == 0 {
		meta = nil
	}
	out.Envelope = backend.Envelope{UUID: msg.UUID, Metadata: meta, Payload: msg.Payload}
	size := len(backend.EncodeEnvelope(out.Envelope))
	if limit > 0 && size > limit {
		return backend.OutMessage{}, 0, &backend.SizeError{UUID: msg.UUID, Size: size, Limit: limit}
	}
	return out, size, nil
}

// watermillDelay reads the metadata of Watermill's components/delay, which sets both keys:
// WatermillDelayedUntil as an RFC3339 time (whole seconds, truncated) and WatermillDelayedFor
// as a Go duration, measured when the delay was attached.
//
// The until time is authoritative, as in Watermill's own delayed Pub/Subs: a message published
// long after the delay was attached (an outbox, a forwarded message) is due when it says, not
// again "for" its duration. But until lost the sub-second part, so the due time lies in
// [until, until+1s), and "for" — which over-estimates once time has passed — narrows it:
// delay = min(for, until+1s-now), never below until-now, never negative. With only one of the
// keys set, that key alone gives the delay. The key that gives a delay beyond MaxDelay is
// reported in a *DelayError.
func watermillDelay(msg *message.Message, now time.Time) (time.Duration, error) {
	untilStr, forStr := msg.Metadata.Get(WatermillDelayedUntil), msg.Metadata.Get(WatermillDelayedFor)
	var d time.Duration
	switch {
	case untilStr != "":
		until, err := time.Parse(time.RFC3339, untilStr)
		if err != nil {
			return 0, &backend.MetadataError{UUID: msg.UUID, Key: WatermillDelayedUntil, Reason: "not an RFC3339 time: " + strconv.Quote(untilStr)}
		}
		d = until.Sub(now) // saturates rather than overflows
		if d > MaxDelay {
			return 0, &backend.DelayError{UUID: msg.UUID, Key: WatermillDelayedUntil, Value: untilStr}
		}
		if forStr != "" {
			f, err := time.ParseDuration(forStr)
			if err != nil {
				return 0, &backend.MetadataError{UUID: msg.UUID, Key: WatermillDelayedFor, Reason: "not a Go duration: " + strconv.Quote(forStr)}
			}
			// Still never before until, which is within MaxDelay.
			d = min(max(d, min(f, d+time.Second)), MaxDelay)
		}
	case forStr != "":
		f, err := time.ParseDuration(forStr)
		if err != nil {
			return 0, &backend.MetadataError{UUID: msg.UUID, Key: WatermillDelayedFor, Reason: "not a Go duration: " + strconv.Quote(forStr)}
		}
		if f > MaxDelay {
			return 0, &backend.DelayError{UUID: msg.UUID, Key: WatermillDelayedFor, Value: forStr}
		}
		d = f
	}
	return max(d, 0), nil
}
