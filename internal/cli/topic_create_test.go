package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/partition"
)

// topic create records the count; the tools then see one topic whose counts add up its
// partitions, and refuse what would split a topic two ways.
func TestTopicCreateWithPartitions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, out, errOut := f.run("topic", "create", "orders", "--partitions", "4")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Created topic orders with 4 partitions")
	code, out, _ = f.run("topic", "create", "orders", "--partitions", "4")
	require.Equal(t, 0, code)
	require.Contains(t, out, "already has 4 partitions")
	code, _, errOut = f.run("topic", "create", "orders", "--partitions", "8")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `topic "orders" already has 4 partitions`)

	be := partition.Open(f.list)
	f.group(be, "orders", "billing")
	f.publish(be, "orders", 12, 0)
	code, out, _ = f.run("topics")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^list\s+orders\s+billing$`, out)
	require.NotContains(t, out, "orders|", "a partition is no topic of its own")
	code, out, _ = f.run("topic", "show", "orders")
	require.Equal(t, 0, code)
	require.Contains(t, out, "partitions: 4")
	code, out, _ = f.run("stats", "--topic", "orders", "--group", "billing")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^list\s+orders\s+billing\s+12\s`, out, "the ready count over the partitions")

	f.publish(f.list, "busy", 1, 0)
	code, _, errOut = f.run("topic", "create", "busy", "--partitions", "4")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "in use under prefix")
	code, _, errOut = f.run("topic", "create", "x", "--partitions", "2000")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "want 1 to 1024")
}
