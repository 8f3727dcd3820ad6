package list

import (
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// A consumer blocked in BLMOVE when its group is paused takes the next publish's entry into
// processing; register.lua puts it back where it was, and the claim returns nothing at the end
// of its Block: nothing waits in processing because of the pause.
func TestPauseWhileBlockedPutsTheMovedEntryBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	const block = 300 * time.Millisecond
	done := e.blockedClaim(&backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
	require.NoError(t, e.b.PauseGroup(e.Ctx, "t", "g"))
	ids := e.Publish("t", "a", "b")
	r := <-done
	require.NoError(t, r.err)
	require.Empty(t, r.ds)
	k := e.gk("t", "g")
	require.False(t, e.Exists(k.processing))
	require.Equal(t, []string{ids[1], ids[0]}, e.readyIDs(k.ready), "the moved entry is back at the consume end")
	require.Empty(t, e.holders(k))

	require.NoError(t, e.b.ResumeGroup(e.Ctx, "t", "g"))
	require.Equal(t, []string{"a", "b"}, adaptertest.Payloads(e.Claim("t", "g", "c", 10)))
}
