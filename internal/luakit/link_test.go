package luakit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLinkKeepsOnlyWhatTheVerbNeeds(t *testing.T) {
	t.Parallel()
	lib := `-- a header
if redis.replicate_commands ~= nil then redis.replicate_commands() end

-- used by b
local A, A2 = 1, 2

-- b needs A
local function b(x)
  -- inside
  return x + A
end

local function unused()
  return 'never'
end

local T = {x = 1,
  y = b(2)}

local function c()
  return T.x
end
`
	src := Link("return c()\n", lib)
	require.Contains(t, src, "replicate_commands", "a statement is always kept")
	require.Contains(t, src, "local A, A2 = 1, 2")
	require.Contains(t, src, "local function b(x)\n  -- inside\n  return x + A\nend\n")
	require.Contains(t, src, "y = b(2)}")
	require.Contains(t, src, "local function c()")
	require.NotContains(t, src, "unused")
	require.True(t, strings.HasSuffix(src, "return c()\n"))
	require.Less(t, strings.Index(src, "local A,"), strings.Index(src, "local function b"), "order kept")

	require.NotContains(t, Link("return 1\n", lib), "local function", "nothing needed, nothing kept")
}

// Both adapters' publish scripts link the one sweep_lanes of common.lua, with what it uses.
func TestCommonLinksTheLaneSweep(t *testing.T) {
	t.Parallel()
	src := Link("sweep_lanes(KEYS[1], now_ms())\n", Common())
	require.Contains(t, src, "local LANE_IDLE_MS = 3600000")
	require.Contains(t, src, "local function call_chunked(")
	require.Contains(t, src, "local function sweep_lanes(meta, now)")
	require.NotContains(t, src, "local function tombstone(", "what the verb does not use stays out")
}
