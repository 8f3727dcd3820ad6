package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestRun checks that every account's events were applied in publish order, each account on
// the partition its key hashes to, with the partitions shared evenly by the two workers; and
// that a second run prints the same.
func TestRun(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	const want = `topic "accounts" has 4 partitions
acct-1: partition 0, 10 events, balance 0
acct-2: partition 1, 10 events, balance 0
acct-3: partition 2, 10 events, balance 0
acct-4: partition 3, 10 events, balance 0
acct-5: partition 0, 10 events, balance 0
acct-6: partition 1, 10 events, balance 0
acct-7: partition 2, 10 events, balance 0
acct-8: partition 3, 10 events, balance 0
worker-a handled the accounts of 2 of the 4 partitions
worker-b handled the accounts of 2 of the 4 partitions
events out of turn: 0
`
	for range 2 {
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), &out, server.URL()))
		require.Equal(t, want, out.String())
	}
}
