package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestRun checks the story the worker tells: an order charged at once, one charged on its
// second delivery after Backoff sent it back through Redis, one dead-lettered after three
// deliveries of two tries each, a duplicate skipped by Idempotent, and the metrics of all
// that.
func TestRun(t *testing.T) {
	const want = `published order-1, order-2, order-3
order-1: delivery 1: charged
order-2: delivery 1: gateway timeout, gateway timeout; delivery 2: charged
order-3: delivery 1: card declined, card declined; delivery 2: card declined, card declined; delivery 3: card declined, card declined
dead letter: order-3 after 3 deliveries, reason "card declined"
published order-1 again, with the same UUID
order-1 after the duplicate: delivery 1: charged
metrics:
  relq_handler_attempts{handler="charge",topic="payments"} count 7, sum 11
  relq_handler_messages_total{handler="charge",outcome="duplicate",topic="payments"} 1
  relq_handler_messages_total{handler="charge",outcome="error",topic="payments"} 4
  relq_handler_messages_total{handler="charge",outcome="success",topic="payments"} 2
`
	var out bytes.Buffer
	// A private server, as the other examples' tests use: run deletes its fixed key prefix,
	// which must never happen on a Redis given in RELQ_TEST_REDIS_URL.
	require.NoError(t, run(t.Context(), &out, redistest.Start(t, redistest.Options{}).URL()))
	require.Equal(t, want, out.String())
}
