package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestRun checks that the jobs fire in due order, priority first among jobs due together,
// and that a second run on the same Redis prints the same.
func TestRun(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	for range 2 {
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), &out, server.URL()))
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		require.Equal(t, []string{
			"scheduled send-reminder in 300ms, priority 0",
			"scheduled charge-card   in 100ms, priority 0",
			"scheduled email-receipt in 200ms, priority 0",
			"scheduled notify-admin  in 200ms, priority 10",
			"scheduled warm-cache    in   0ms, priority 0",
		}, lines[:5])

		// Lateness depends on the machine's load, so only its form is checked.
		var fired []string
		for _, line := range lines[5:] {
			name, bucket, ok := strings.Cut(strings.TrimPrefix(line, "fired "), " ")
			require.True(t, ok, line)
			require.Contains(t, []string{"on time (<50ms late)", "a little late (50-250ms)", "late (>=250ms)"}, strings.TrimSpace(bucket), line)
			fired = append(fired, name)
		}
		require.Equal(t, []string{"warm-cache", "charge-card", "notify-admin", "email-receipt", "send-reminder"}, fired)
	}
}
