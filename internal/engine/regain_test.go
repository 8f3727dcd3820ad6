package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
)

// Another client deletes the registry alone: the group's own messages survive, and
// registering it again keeps them. A publisher that knew nothing of the group put what it
// published meanwhile in the backlog, which cannot be merged into them, and stays a backlog,
// shown by Topic, until it expires.
func TestRegisteringAgainKeepsTheGroupsSurvivingMessages(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "g")
			publish(t, e, "t", "a", "b", "c")
			require.NoError(t, e.Client().Del(ctx, e.Keys("t", "g").Registry()).Err())
			require.NoError(t, e.Learn("t", []any{"0", "0"}), "a publisher that knows no group")
			publish(t, e, "t", "d", "e")
			res, err := e.RegisterAgain(ctx, &backend.RegisterAgainParams{Topic: "t", Group: "g"})
			require.NoError(t, err)
			require.True(t, res.Registered, "%+v", res)
			require.ElementsMatch(t, []string{"a", "b", "c"}, adaptertest.Payloads(claim(t, e, "t", "g", "c", 10)),
				"the group's own messages")
			topic, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, int64(2), topic.Backlog, "what was published meanwhile stays a backlog, in sight")
		})
	}
}
