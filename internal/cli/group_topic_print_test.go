package cli

// What the group and topic verbs print and ask, on an in-memory Admin (no Redis): the same
// verbs on the real backends are in admin_verbs_test.go.

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

func TestGroupLsPauseResume(t *testing.T) {
	t.Parallel()
	a := shop()
	a.add("replies", "req-1")
	a.topics["replies"].groups["req-1"].info = backend.GroupInfo{Topic: "replies", Name: "req-1", Ephemeral: true, Expires: shopDue}
	billing := a.topics["orders"].groups["billing"]
	billing.reregistered, billing.reregisteredAt = 2, time.Now().Add(-3*time.Minute)
	r := memRun{admins: []*memAdmin{a}, width: 200}

	code, out, _ := r.run(t, "group", "ls", "orders")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^GROUP\s+STATUS\s+READY\s+DELAYED\s+PENDING\s+DEAD\s+OLDEST PENDING\s+OLDEST READY\s+REREGISTERED\s+KIND$`, out)
	require.Regexp(t, `(?m)^audit\s+running\s+0\s+0\s+0\s+0\s+-\s+-\s+0\s+durable$`, out)
	require.Regexp(t, `(?m)^billing\s+running\s+5\s+1\s+2\s+1\s+-\s+-\s+2 \(3m\d+s ago\)\s+durable$`, out)

	code, out, _ = r.run(t, "group", "pause", "orders", "billing")
	require.Equal(t, 0, code)
	require.Equal(t, `Paused orders/billing (list backend, prefix "relq"): its consumers get nothing until relq group resume orders billing; `+
		"publishes still store messages for it.\n", out)
	code, out, _ = r.run(t, "group", "list", "orders")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^billing\s+paused\s`, out)

	code, out, _ = r.run(t, "group", "resume", "orders", "billing")
	require.Equal(t, 0, code)
	require.Equal(t, "Resumed orders/billing (list backend, prefix \"relq\"): its consumers get messages again.\n", out)
	code, out, _ = r.run(t, "group", "ls", "orders")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^billing\s+running\s`, out)

	code, out, _ = r.run(t, "group", "ls", "replies")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^req-1\s+running\s.*\s+ephemeral, until `+timestamp(shopDue)+`$`, out)
}

func TestGroupDeleteAsksAndSaysWhenTheTopicWentWithIt(t *testing.T) {
	t.Parallel()
	a := shop()
	code, _, errOut := memRun{admins: []*memAdmin{a}}.run(t, "group", "delete", "orders", "billing")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: group delete deletes for good and asks first, but standard input is not a terminal: pass --yes")

	code, out, errOut := memRun{admins: []*memAdmin{a}, terminalIn: true, in: "no\n"}.run(t, "group", "delete", "orders", "billing")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `Delete group orders/billing (list backend, prefix "relq") at redis://mem:6379 (test), `+
		`which holds 5 ready, 1 delayed, 2 pending and 1 dead messages, for good? [y/N] `)
	require.Equal(t, "Nothing deleted.\n", out)

	code, out, _ = memRun{admins: []*memAdmin{a}, terminalIn: true, in: "yes\n"}.run(t, "group", "rm", "orders", "billing")
	require.Equal(t, 0, code)
	require.Equal(t, `Deleted group orders/billing (list backend, prefix "relq"), which held 5 ready, 1 delayed, 2 pending and 1 dead messages.`+"\n", out)

	code, out, _ = memRun{admins: []*memAdmin{a}}.run(t, "group", "delete", "orders", "audit", "--yes")
	require.Equal(t, 0, code)
	require.Equal(t, `Deleted group orders/audit (list backend, prefix "relq"), which held no messages.`+"\n"+
		"It was the last group of topic orders, which had no backlog: every key of the topic is gone too, but the group's tombstone, which expires after the backend's TombstoneTTL.\n", out)
	_, err := a.Topic(t.Context(), "orders")
	require.ErrorIs(t, err, backend.ErrTopicNotFound)
}

func TestTopicLsShowDelete(t *testing.T) {
	t.Parallel()
	a := shop().add("signups", "")
	a.topics["signups"].backlog = 3
	a.topics["signups"].dropped = 120
	r := memRun{admins: []*memAdmin{a, newMemAdmin("zset").add("reminders", "default")}, width: 200}

	code, out, _ := r.run(t, "topic", "ls")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^BACKEND\s+TOPIC\s+BACKLOG\s+GROUPS$`, out)
	require.Regexp(t, `(?m)^list\s+orders\s+0\s+audit, billing$`, out)
	require.Regexp(t, `(?m)^list\s+payments\s+0\s+ledger$`, out)
	require.Regexp(t, `(?m)^zset\s+reminders\s+0\s+default$`, out)
	require.Regexp(t, `(?m)^list\s+signups\s+3\s+$`, out)

	code, out, _ = r.run(t, "topic", "ls", "--backend", "zset")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "orders")

	code, out, _ = r.run(t, "topic", "show", "orders")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Topic orders (list backend, prefix \"relq\")\n  backlog:  none\n  dropped:  none\n  groups:   2\n\n")
	require.Regexp(t, `(?m)^billing\s+running\s+5\s+1\s+2\s+1\s`, out)

	code, out, _ = r.run(t, "topic", "show", "signups")
	require.Equal(t, 0, code)
	require.Equal(t, "Topic signups (list backend, prefix \"relq\")\n  backlog:  3 messages, kept for the first group that registers\n"+
		"  dropped:  120 messages, the backlog's oldest, past its limit while the topic had no group: no group received them\n  groups:   0\n\n"+
		"No groups on topic signups (list backend, prefix \"relq\"): what is published to it waits in its backlog (3 now) for the first group that registers.\n", out)

	r.terminalIn, r.in = true, "y\n"
	code, out, errOut := r.run(t, "topic", "delete", "orders")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, `Delete topic orders (list backend, prefix "relq") at redis://mem:6379 (test) for good: `+
		`2 groups (audit, billing) with 5 ready, 1 delayed, 2 pending and 1 dead messages, and a backlog of 0? [y/N] `)
	require.Equal(t, `Deleted topic orders (list backend, prefix "relq"): 2 groups (audit, billing) with 5 ready, 1 delayed, 2 pending `+
		"and 1 dead messages, and a backlog of 0. A publish to it creates it again, with message IDs above the old ones.\n", out)
	_, err := a.Topic(t.Context(), "orders")
	require.ErrorIs(t, err, backend.ErrTopicNotFound)

	r.terminalIn, r.in = false, ""
	code, out, _ = r.run(t, "topic", "rm", "signups", "--yes")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Deleted topic signups (list backend, prefix \"relq\"): no groups, and a backlog of 3.")
}

// A name that does not exist is an error that lists what does.
func TestAdminVerbsNameWhatExists(t *testing.T) {
	t.Parallel()
	r := memRun{admins: []*memAdmin{shop(), newMemAdmin("zset").add("orders", "default")}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "show", "ordres"}, `relq: topic "ordres" not found under prefix "relq" in the list, zset and streams backends; ` +
			`topics: orders (list), orders (zset), payments (list)`},
		{[]string{"topic", "show", "orders"}, `relq: topic "orders" exists under prefix "relq" in more than one backend (list, zset): pass --backend`},
		{[]string{"group", "pause", "orders", "biling", "--backend", "list"}, `relq: group "biling" not found on topic "orders" (list); its groups: audit, billing`},
		{[]string{"msg", "ls", "payments", "x y", "--backend", "list"}, `relq: invalid group name "x y"`},
		{[]string{"msg", "ls", "a*b", "g"}, `relq: invalid topic name "a*b"`},
	} {
		code, _, errOut := r.run(t, tc.args...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, errOut, tc.want, tc.args)
	}

	none := memRun{admins: []*memAdmin{newMemAdmin("list")}}
	code, _, errOut := none.run(t, "group", "ls", "orders")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `relq: topic "orders" not found: there are no topics under prefix "relq" in the list backend at all (is --prefix right?)`)
}

// noAdmin is a backend without the Admin API.
type noAdmin struct{ finder }

func TestAdminVerbsNeedTheAdminAPI(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"topic", "ls"}, Env{Out: &out, Err: &errOut, Getenv: func(string) string { return "" },
		dial: func(_ context.Context, o *connOptions) (*session, error) {
			return &session{prefix: o.prefix, backends: []*source{{name: "list", finder: noAdmin{shop()}}}}, nil
		}})
	require.Equal(t, 1, code)
	require.Equal(t, "relq: the list backend of this build has no Admin API (backend.Admin), which this command needs\n", errOut.String())
}
