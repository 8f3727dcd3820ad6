package backendkit

import (
	"testing"

	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

func TestRedisVersion(t *testing.T) {
	t.Parallel()
	for info, want := range map[string][3]int{
		"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n": {7, 0, 1},
		"redis_version:6.2.0\n":  {6, 2, 1},
		"redis_version:6.0.16\n": {6, 0, 1},
		"redis_version:x\n":      {0, 0, 0},
		"nothing here\n":         {0, 0, 0},
	} {
		major, minor, ok := ParseVersion(info)
		got := [3]int{major, minor, 0}
		if ok {
			got[2] = 1
		}
		if want[2] == 0 {
			require.False(t, ok, info)
			continue
		}
		require.Equal(t, want, got, info)
	}
	var g VersionGate
	require.False(t, g.Passed())
	require.NoError(t, g.Check(t.Context(), redistest.Shared(t).Client(t)), "the test server is recent enough")
	require.True(t, g.Passed())
}
