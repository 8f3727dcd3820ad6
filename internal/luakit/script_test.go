package luakit

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestSourceIsCommonThenTheAdaptersLibThenTheVerb(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"lua/lib.lua": {Data: []byte("-- adapter lib")},
		"lua/ack.lua": {Data: []byte("-- ack verb")},
	}
	src := Source(fsys, "ack")
	at := func(s string) int {
		i := strings.Index(src, s)
		require.GreaterOrEqual(t, i, 0, "%q missing", s)
		return i
	}
	require.Zero(t, at("-- common.lua"))
	require.Less(t, at("local function now_ms()"), at("-- adapter lib"))
	require.Less(t, at("-- adapter lib"), at("-- ack verb"))
	require.Contains(t, Common(), "local function now_ms()")
	require.Panics(t, func() { Source(fsys, "nack") }, "a missing verb file is a build mistake")
}
