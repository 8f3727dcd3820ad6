package adaptertest

import "github.com/relq/relq/pubsub"

// Envelope is the test message of payload: UUID "uuid-<payload>", metadata k=<payload>.
func Envelope(payload string) pubsub.Envelope {
	return pubsub.Envelope{UUID: "uuid-" + payload, Metadata: map[string]string{"k": payload}, Payload: []byte(payload)}
}

// Held returns the fencing tokens of ds.
func Held(ds ...pubsub.Delivery) []pubsub.Held {
	out := make([]pubsub.Held, len(ds))
	for i, d := range ds {
		out[i] = pubsub.Held{ID: d.ID, Attempt: d.Attempt}
	}
	return out
}

// IDs returns the delivery IDs of ds.
func IDs(ds []pubsub.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// Payloads returns the payloads of ds as strings.
func Payloads(ds []pubsub.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Envelope.Payload)
	}
	return out
}
