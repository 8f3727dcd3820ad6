package adaptertest

import (
	"strconv"
	"testing"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// Envelope is the test message of payload: UUID "uuid-<payload>", metadata k=<payload>.
func Envelope(payload string) backend.Envelope {
	return backend.Envelope{UUID: "uuid-" + payload, Metadata: map[string]string{"k": payload}, Payload: []byte(payload)}
}

// Held returns the fencing tokens of ds.
func Held(ds ...backend.Delivery) []backend.Held {
	out := make([]backend.Held, len(ds))
	for i, d := range ds {
		out[i] = backend.Held{ID: d.ID, Attempt: d.Attempt}
	}
	return out
}

// IDs returns the delivery IDs of ds.
func IDs(ds []backend.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// Payloads returns the payloads of ds as strings.
func Payloads(ds []backend.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Envelope.Payload)
	}
	return out
}

// IDAfter is the list/zset delivery ID n places after id (before it when n < 0): a topic's IDs
// count up by one per message published, from wherever its first one starts (the Redis clock
// when the topic was created), so tests derive IDs from those Publish returned.
func IDAfter(t testing.TB, id string, n int) string {
	t.Helper()
	v, err := strconv.ParseInt(id, 10, 64)
	require.NoError(t, err, "delivery ID %q", id)
	return strconv.FormatInt(v+int64(n), 10)
}

// IDsFrom is the n list/zset delivery IDs from first on: first, first+1, ...
func IDsFrom(t testing.TB, first string, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = IDAfter(t, first, i)
	}
	return out
}
