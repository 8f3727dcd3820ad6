package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestRun checks that the poison order is dead-lettered after three failed deliveries while
// the others are charged, is listed with its reason and attempts, and is charged once
// requeued with the handler fixed.
func TestRun(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	const want = `charged order-1 7.00 (attempt 1)
failed  order-2 $12.50 (attempt 1): strconv.ParseFloat: parsing "$12.50": invalid syntax
charged order-3 3.10 (attempt 1)
failed  order-2 $12.50 (attempt 2): strconv.ParseFloat: parsing "$12.50": invalid syntax
failed  order-2 $12.50 (attempt 3): strconv.ParseFloat: parsing "$12.50": invalid syntax
dead letters of orders/billing: 1
  "order-2 $12.50": 3 attempts, reason "nacked after 3 attempts"
fixed the handler and requeued 1 dead letter(s)
charged order-2 12.50 (attempt 1)
`
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, server.URL()))
	require.Equal(t, want, out.String())
}
