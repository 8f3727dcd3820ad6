package luakit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCommonHoldsTheSharedHelpers(t *testing.T) {
	t.Parallel()
	require.Contains(t, Common(), "-- common.lua")
	require.Contains(t, Common(), "local function now_ms()")
}
