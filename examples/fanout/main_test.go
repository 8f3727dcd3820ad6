package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestRun checks that each group got every order, and that a second run on the same Redis
// (whose stream still holds the first run's orders) prints the same.
func TestRun(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	const want = `published 5 orders to "orders"
billing  got 5 of 5: order-1 order-2 order-3 order-4 order-5
shipping got 5 of 5: order-1 order-2 order-3 order-4 order-5
`
	for range 2 {
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), &out, server.URL()))
		require.Equal(t, want, out.String())
	}
}
