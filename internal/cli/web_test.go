package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebRefusesAnOpenAddressWithoutAuth checks that relq web does not serve an address
// other machines can reach without authentication unless told to, and that a malformed
// RELQ_WEB_BASIC_AUTH is an error, both before connecting to Redis.
func TestWebRefusesAnOpenAddressWithoutAuth(t *testing.T) {
	ctx := context.Background()
	code, _, errOut := runTool(t, ctx, Env{}, "web", "--addr", "0.0.0.0:0")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "can be reached from other machines: set RELQ_WEB_TOKEN or RELQ_WEB_BASIC_AUTH, or pass --no-auth")

	env := Env{Getenv: func(k string) string {
		if k == envWebBasic {
			return "no-colon"
		}
		return ""
	}}
	code, _, errOut = runTool(t, ctx, env, "web")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "RELQ_WEB_BASIC_AUTH: want user:password")
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "127.0.0.2:80": true,
		"0.0.0.0:8080": false, ":8080": false, "192.168.1.5:8080": false, "[::]:8080": false, "nonsense": false,
	} {
		require.Equal(t, want, loopback(addr), addr)
	}
}

func TestAllowedHosts(t *testing.T) {
	require.Equal(t, []string{"localhost", "127.0.0.1", "::1", "127.0.0.1"}, allowedHosts("127.0.0.1:8080", nil))
	require.Equal(t, []string{"localhost", "127.0.0.1", "::1", "127.0.0.2", "relq.internal"}, allowedHosts("127.0.0.2:80", []string{"relq.internal"}))
	require.Nil(t, allowedHosts("0.0.0.0:8080", nil), "off loopback without --allow-host: auth guards it")
	require.Equal(t, []string{"relq.example"}, allowedHosts("0.0.0.0:8080", []string{"relq.example"}))
	require.Equal(t, []string{"10.0.0.5", "relq.example"}, allowedHosts("10.0.0.5:8080", []string{"relq.example"}))
}
