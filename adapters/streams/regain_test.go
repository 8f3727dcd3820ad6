package streams

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
)

// Redis forgets a topic with two groups. What is published afterwards reaches both once they
// register again, in either order: the first takes the stream from its start, and the second,
// whose subscription had claimed nothing (no After), starts where the first did, not after
// what the first has read since.
func TestBothGroupsOfAForgottenTopicGetWhatFollows(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) {
		topic := e.Prefix + "-t"
		e.EnsureGroup(topic, "g1")
		e.EnsureGroup(topic, "g2")
		var all []string
		for _, k := range append(e.Keys(topic), "") {
			if k != "" {
				all = append(all, e.Tag(topic)+":"+k)
			}
		}
		all = append(all, e.tk(topic).stream)
		require.NoError(t, e.C.Del(e.Ctx, all...).Err())

		ids := e.Publish(topic, "a", "b", "c")
		regain := func(group, after string) backend.RegisterAgainResult {
			t.Helper()
			res, err := e.b.RegisterAgain(e.Ctx, &backend.RegisterAgainParams{Topic: topic, Group: group, After: after})
			require.NoError(t, err)
			require.True(t, res.Registered)
			return res
		}
		regain("g1", "")
		require.Equal(t, ids, adaptertest.IDs(e.Claim(topic, "g1", "c", 10)))
		regain("g2", "")
		require.Equal(t, ids, adaptertest.IDs(e.Claim(topic, "g2", "c", 10)), "the second group missed what the first read")
	})
}
