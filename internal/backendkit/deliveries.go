package backendkit

import (
	"fmt"

	"github.com/relq/relq/backend"
)

// DecodeDeliveries decodes a claim script's flat {id, attempt, body, ...} reply, decoding each
// body with decode. A body decode rejects becomes a Delivery whose Err is "<what> <id> of topic
// <topic>: <decode's error>" (which wraps backend.ErrCorruptEntry), for the caller to
// dead-letter.
func DecodeDeliveries(flat []any, topic, what string, decode func(body any) (backend.Envelope, error)) []backend.Delivery {
	out := make([]backend.Delivery, 0, len(flat)/3)
	for i := 0; i+2 < len(flat); i += 3 {
		id, _ := flat[i].(string)
		d := backend.Delivery{ID: id, Attempt: int(Int(flat[i+1]))}
		env, err := decode(flat[i+2])
		if err != nil {
			d.Err = fmt.Errorf("%s %s of topic %q: %w", what, id, topic, err)
		} else {
			d.Envelope = env
		}
		out = append(out, d)
	}
	return out
}

// ErrBodyMissing is the decode error of a delivery whose stored body is gone (deleted by
// hand, lost, or never written by relq): the script returns it with a nil body so that the
// subscriber dead-letters it with this reason instead of it vanishing.
var ErrBodyMissing = fmt.Errorf("%w: body missing", backend.ErrCorruptEntry)

// DecodeEnvelope decodes a body stored as relq's envelope (a bulk string; nil is a missing
// body; anything else is decoded as empty, which is corrupt).
func DecodeEnvelope(body any) (backend.Envelope, error) {
	if body == nil {
		return backend.Envelope{}, ErrBodyMissing
	}
	s, _ := body.(string)
	return backend.DecodeEnvelope([]byte(s))
}
