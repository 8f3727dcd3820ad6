package cli

// What msg ls, show, rm and run print and ask, on an in-memory Admin (no Redis): the same
// verbs on the real backends are in admin_verbs_test.go.

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

var (
	shopDue    = time.Date(2026, 11, 30, 14, 8, 5, 0, time.UTC)
	shopDeadAt = time.Date(2026, 11, 30, 13, 59, 34, 559e6, time.UTC)
	longReason = "handler: " + strings.Repeat("the card issuer declined the charge, ", 6) + "end"
)

// shop is the list backend's orders/billing with messages in every state, an empty
// orders/audit, and payments/ledger.
func shop() *memAdmin {
	return newMemAdmin("list").add("orders", "billing",
		backend.MessageInfo{ID: "1", State: backend.StateReady, Envelope: backend.Envelope{UUID: "u-json",
			Metadata: map[string]string{"tenant": "acme", "order": "42", "evil": "\x1b[31mred"},
			Payload:  []byte(`{"order": 42, "items": ["a", "b"]}`)}},
		backend.MessageInfo{ID: "2", State: backend.StateReady, Attempts: 1, Envelope: backend.Envelope{UUID: "u-text", Payload: []byte("hello\nworld")}},
		backend.MessageInfo{ID: "3", State: backend.StateReady, Envelope: backend.Envelope{UUID: "u-bin", Payload: []byte{0, 1, 0xff, 'h', 'i'}}},
		backend.MessageInfo{ID: "4", State: backend.StateDelayed, Attempts: 1, Due: shopDue, Envelope: backend.Envelope{UUID: "u-later", Payload: []byte("later")}},
		backend.MessageInfo{ID: "5", State: backend.StatePending, Attempts: 2, Consumer: "worker-1", LeaseLeft: 28100 * time.Millisecond,
			Since: shopDeadAt, Envelope: backend.Envelope{UUID: "u-held", Payload: []byte("held")}},
		backend.MessageInfo{ID: "6", State: backend.StatePending, Attempts: 1, Consumer: "worker-2", LeaseLeft: -3 * time.Second,
			Envelope: backend.Envelope{UUID: "u-lost", Payload: []byte("lost")}},
		backend.MessageInfo{ID: "7", State: backend.StateDead, Attempts: 3, DeadAt: shopDeadAt, Reason: longReason,
			Envelope: backend.Envelope{UUID: "u-dead", Payload: []byte("poison")}},
		backend.MessageInfo{ID: "8", State: backend.StateReady, Raw: []byte{0x7b, 1, 2},
			Err: errors.New("relq: corrupt entry: unknown envelope version 123")},
		backend.MessageInfo{ID: "9", State: backend.StateReady, BodyMissing: true},
	).add("orders", "audit").add("payments", "ledger")
}

func TestMsgLsPrintsEachStatesColumns(t *testing.T) {
	t.Parallel()
	r := memRun{admins: []*memAdmin{shop()}, width: 1000}

	code, out, _ := r.run(t, "msg", "ls", "orders", "billing")
	require.Equal(t, 0, code)
	require.Contains(t, out, `Ready messages of orders/billing (list backend, prefix "relq"): 5 in all, in delivery order`+"\n\n")
	require.Regexp(t, `(?m)^ID\s+ATTEMPTS\s+UUID\s+PAYLOAD$`, out)
	require.Regexp(t, `(?m)^1\s+0\s+u-json\s+\{"order":42,"items":\["a","b"\]\}$`, out)
	require.Regexp(t, `(?m)^2\s+1\s+u-text\s+hello\\nworld$`, out)
	require.Regexp(t, `(?m)^3\s+0\s+u-bin\s+hex 0001ff6869$`, out)
	require.Regexp(t, `(?m)^8\s+0\s+\(undecodable\)\s+\(3 bytes: relq: corrupt entry: unknown envelope version 123\)$`, out)
	require.Regexp(t, `(?m)^9\s+0\s+\(body missing\)\s+-$`, out)
	require.NotContains(t, out, "More:")

	code, out, _ = r.run(t, "msg", "ls", "orders", "billing", "--state", "delayed")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Delayed messages of orders/billing (list backend, prefix \"relq\"): 1 in all, soonest due first")
	require.Regexp(t, `(?m)^ID\s+DUE\s+ATTEMPTS\s+UUID\s+PAYLOAD$`, out)
	require.Regexp(t, `(?m)^4\s+`+timestamp(shopDue)+`\s+1\s+u-later\s+later$`, out)

	code, out, _ = r.run(t, "msg", "ls", "orders", "billing", "-s", "pending")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^ID\s+CONSUMER\s+LEASE LEFT\s+ATTEMPTS\s+UUID\s+PAYLOAD$`, out)
	require.Regexp(t, `(?m)^5\s+worker-1\s+28\.1s\s+2\s+u-held\s+held$`, out)
	require.Regexp(t, `(?m)^6\s+worker-2\s+expired 3\.0s ago\s+1\s+u-lost\s+lost$`, out)

	code, out, _ = r.run(t, "msg", "ls", "orders", "billing", "--state", "dead")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Dead letters of orders/billing (list backend, prefix \"relq\"): 1 in all, oldest first")
	require.Regexp(t, `(?m)^ID\s+ATTEMPTS\s+DEAD-LETTERED AT\s+UUID\s+REASON$`, out)
	require.Regexp(t, `(?m)^7\s+3\s+`+timestamp(shopDeadAt)+`\s+u-dead\s+`+longReason+`$`, out)

	code, out, _ = r.run(t, "msg", "ls", "orders", "audit", "--state", "dead")
	require.Equal(t, 0, code)
	require.Equal(t, "No dead messages in orders/audit (list backend, prefix \"relq\").\n", out)
}

// A zset topic's tables show each message's priority.
func TestMsgLsShowsPrioritiesOnZset(t *testing.T) {
	t.Parallel()
	a := newMemAdmin("zset").add("reminders", "default",
		backend.MessageInfo{ID: "1", State: backend.StateReady, Priority: 5, Envelope: backend.Envelope{UUID: "u1", Payload: []byte("x")}})
	code, out, _ := memRun{admins: []*memAdmin{a}}.run(t, "msg", "ls", "reminders", "default")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^ID\s+ATTEMPTS\s+PRIORITY\s+UUID\s+PAYLOAD$`, out)
	require.Regexp(t, `(?m)^1\s+0\s+5\s+u1\s+x$`, out)
}

// A long reason or payload is cut to a terminal's width, kept whole where the width is
// unknown (a pipe: scripts read every reason), and shown whole by show.
func TestMsgLsCutsLongCellsToTheWidth(t *testing.T) {
	t.Parallel()
	code, out, _ := memRun{admins: []*memAdmin{shop()}, width: 70}.run(t, "msg", "ls", "orders", "billing", "--state", "dead")
	require.Equal(t, 0, code)
	row := rowOf(t, out, "7 ")
	require.Equal(t, 70, utf8.RuneCountInString(row), row)
	require.True(t, strings.HasSuffix(row, "…"), row)
	require.Contains(t, row, "  u-dead  handler: the card ")

	code, out, _ = memRun{admins: []*memAdmin{shop()}, width: 0}.run(t, "msg", "ls", "orders", "billing", "--state", "dead")
	require.Equal(t, 0, code)
	require.True(t, strings.HasSuffix(rowOf(t, out, "7 "), longReason), rowOf(t, out, "7 "))

	code, out, _ = memRun{admins: []*memAdmin{shop()}, width: 40}.run(t, "msg", "show", "orders", "billing", "7")
	require.Equal(t, 0, code)
	require.Contains(t, out, "  reason:           "+longReason+"\n")
}

// rowOf is the line of out that starts with prefix.
func rowOf(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf("no line starts with %q", prefix)
	return ""
}

// Off a terminal, a page ends with the cursor of the next; --cursor goes on from there.
func TestMsgLsPrintsTheNextCursor(t *testing.T) {
	t.Parallel()
	r := memRun{admins: []*memAdmin{shop()}, width: 200}

	code, out, _ := r.run(t, "msg", "ls", "orders", "billing", "--count", "2")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^1\s`, out)
	require.Regexp(t, `(?m)^2\s`, out)
	require.NotRegexp(t, `(?m)^3\s`, out)
	require.True(t, strings.HasSuffix(out, "\nMore: --cursor at:2\n"), out)
	require.Equal(t, []string{"1", "2"}, idsIn(out)) // the helpers of admin_verbs_test.go
	require.Equal(t, "at:2", cursorIn(out))
	require.Equal(t, "it's", cursorIn("More: --cursor "+shellQuote("it's")+"\n"))

	code, out, _ = r.run(t, "msg", "ls", "orders", "billing", "-n", "2", "--cursor", "at:4")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^9\s`, out)
	require.NotRegexp(t, `(?m)^[1238]\s`, out)
	require.NotContains(t, out, "More:")

	code, out, _ = r.run(t, "msg", "ls", "orders", "billing", "--cursor", "at:5")
	require.Equal(t, 0, code)
	require.Equal(t, "No more ready messages in orders/billing (list backend, prefix \"relq\") after that cursor.\n", out)

	code, _, errOut := r.run(t, "msg", "ls", "orders", "billing", "--cursor", "bogus")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: ready messages of orders/billing: the --cursor given is not one that a page of this listing printed")

	for _, tc := range []struct{ args, want string }{
		{"--count 0", "relq: --count 0: want 1 to 1000"},
		{"--count 1001", "relq: --count 1001: want 1 to 1000"},
		{"--state gone", `relq: unknown message state "gone": want ready, delayed, pending or dead`},
	} {
		code, _, errOut := r.run(t, append([]string{"msg", "ls", "orders", "billing"}, strings.Fields(tc.args)...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, errOut, tc.want, tc.args)
	}
}

// On a terminal, msg ls asks before each next page; q, or the end of input, stops it with
// the cursor printed.
func TestMsgLsAsksForMoreOnATerminal(t *testing.T) {
	t.Parallel()
	r := memRun{admins: []*memAdmin{shop()}, width: 200, terminal: true, in: "\nq\n"}
	code, out, _ := r.run(t, "msg", "ls", "orders", "billing", "--count", "2")
	require.Equal(t, 0, code)
	require.Equal(t, 2, strings.Count(out, "-- more: Enter for the next 2, q to stop -- "))
	require.Equal(t, 1, strings.Count(out, "Ready messages of"), "one title, a header per page")
	require.Len(t, regexp.MustCompile(`(?m)^ID\s+ATTEMPTS\s+UUID\s+PAYLOAD$`).FindAllString(out, -1), 2)
	for _, id := range []string{"1", "2", "3", "8"} {
		require.Regexp(t, `(?m)^`+id+`\s`, out)
	}
	require.NotRegexp(t, `(?m)^9\s`, out)
	require.True(t, strings.HasSuffix(out, "\nMore: --cursor at:4\n"), out)

	r.in = "" // end of input at the first question
	code, out, _ = r.run(t, "msg", "ls", "orders", "billing", "--count", "4")
	require.Equal(t, 0, code)
	require.Equal(t, 1, strings.Count(out, "-- more:"))
	require.True(t, strings.HasSuffix(out, "\nMore: --cursor at:4\n"), out)

	r.in = "\n\n"
	code, out, _ = r.run(t, "msg", "ls", "orders", "billing", "--count", "2")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^9\s`, out)
	require.NotContains(t, out, "More: --cursor")
}

func TestMsgShowPrintsTheMessageWhole(t *testing.T) {
	t.Parallel()
	r := memRun{admins: []*memAdmin{shop()}, width: 40}

	code, out, _ := r.run(t, "msg", "show", "orders", "billing", "1")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "\x1b")
	require.Equal(t, `Message 1 of orders/billing (list backend, prefix "relq")
  state:            ready
  attempts:         0
  uuid:             u-json
  metadata:         3
    evil    \x1b[31mred
    order   42
    tenant  acme
  payload:          34 bytes, JSON
    {
      "order": 42,
      "items": [
        "a",
        "b"
      ]
    }
`, out)

	code, out, _ = r.run(t, "msg", "show", "orders", "billing", "5")
	require.Equal(t, 0, code)
	require.Contains(t, out, "  state:            pending\n  attempts:         2\n  consumer:         worker-1\n"+
		"  claimed at:       "+timestamp(shopDeadAt)+"\n  lease left:       28.1s\n")
	require.Contains(t, out, "  payload:          4 bytes, text\n    held\n")

	code, out, _ = r.run(t, "msg", "show", "orders", "billing", "6")
	require.Equal(t, 0, code)
	require.Contains(t, out, "  lease left:       expired 3.0s ago: the next reclaim gives it to another consumer\n")

	code, out, _ = r.run(t, "msg", "show", "orders", "billing", "4")
	require.Equal(t, 0, code)
	require.Contains(t, out, "  due:              "+timestamp(shopDue)+" (")

	code, out, _ = r.run(t, "msg", "show", "orders", "billing", "3")
	require.Equal(t, 0, code)
	require.Contains(t, out, "  payload:          5 bytes, binary, hex dump\n    00000000  00 01 ff 68 69")

	code, out, _ = r.run(t, "msg", "show", "orders", "billing", "3", "--raw")
	require.Equal(t, 0, code)
	require.Equal(t, "\x00\x01\xffhi", out)

	code, out, _ = r.run(t, "msg", "show", "orders", "billing", "8")
	require.Equal(t, 0, code)
	require.Contains(t, out, "  decode error:     relq: corrupt entry: unknown envelope version 123\n"+
		"  the stored entry could not be decoded (3 bytes, binary, hex dump):\n    00000000  7b 01 02")

	code, out, _ = r.run(t, "msg", "show", "orders", "billing", "9")
	require.Equal(t, 0, code)
	require.Contains(t, out, "  body:             missing")

	code, _, errOut := r.run(t, "msg", "show", "orders", "billing", "99")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `relq: no message "99" in orders/billing (list backend, prefix "relq"): the group does not hold it `+
		`(relq msg ls orders billing --state STATE lists what it holds)`)
}

func TestMsgRmAsksFirst(t *testing.T) {
	t.Parallel()
	a := shop()
	held := func(id string) bool {
		_, err := a.Message(t.Context(), &backend.MessageParams{Topic: "orders", Group: "billing", ID: id})
		return err == nil
	}

	code, _, errOut := memRun{admins: []*memAdmin{a}, in: "y\n"}.run(t, "msg", "rm", "orders", "billing", "5")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: msg rm deletes for good and asks first, but standard input is not a terminal: pass --yes")
	require.True(t, held("5"))

	for _, answer := range []string{"n\n", "", "whatever\n"} {
		code, out, errOut := memRun{admins: []*memAdmin{a}, in: answer, terminalIn: true}.run(t, "msg", "rm", "orders", "billing", "5")
		require.Equal(t, 1, code)
		require.Contains(t, errOut, `Delete message 5 (pending, held by worker-1) of orders/billing (list backend, prefix "relq") `+
			`at redis://mem:6379 (test) for good? [y/N] `)
		require.Contains(t, errOut, "relq: msg rm not confirmed")
		require.Equal(t, "Nothing deleted.\n", out)
		require.True(t, held("5"))
	}

	code, out, _ := memRun{admins: []*memAdmin{a}, in: "y\n", terminalIn: true}.run(t, "msg", "rm", "orders", "billing", "5")
	require.Equal(t, 0, code)
	require.Equal(t, "Deleted message 5 of orders/billing (list backend, prefix \"relq\").\n", out)
	require.False(t, held("5"))

	code, _, errOut = memRun{admins: []*memAdmin{a}}.run(t, "msg", "rm", "orders", "billing", "4", "--yes")
	require.Equal(t, 0, code)
	require.NotContains(t, errOut, "[y/N]")
	require.False(t, held("4"))

	code, _, errOut = memRun{admins: []*memAdmin{a}}.run(t, "msg", "rm", "orders", "billing", "4", "-y")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `relq: no message "4" in orders/billing`)
}

func TestMsgRunSaysWhereAMessageIs(t *testing.T) {
	t.Parallel()
	a := shop()
	r := memRun{admins: []*memAdmin{a}}

	code, out, _ := r.run(t, "msg", "run", "orders", "billing", "4")
	require.Equal(t, 0, code)
	require.Equal(t, "Message 4 of orders/billing (list backend, prefix \"relq\") is due now: the group's next claim can take it.\n", out)
	m, err := a.Message(t.Context(), &backend.MessageParams{Topic: "orders", Group: "billing", ID: "4"})
	require.NoError(t, err)
	require.Equal(t, backend.StateReady, m.State)

	for id, want := range map[string]string{
		"4": `relq: message 4 of orders/billing (list backend, prefix "relq") is ready, not delayed: it is due already, the group's next claim can take it`,
		"5": `relq: message 5 of orders/billing (list backend, prefix "relq") is pending, held by worker-1, not delayed: only a delayed message can be made due now`,
		"7": `relq: message 7 of orders/billing (list backend, prefix "relq") is a dead letter, not delayed: relq dead requeue --topic orders --group billing 7 puts it back to ready`,
		"0": `relq: no message "0" in orders/billing`,
	} {
		code, _, errOut := r.run(t, "msg", "run", "orders", "billing", id)
		require.Equal(t, 1, code, id)
		require.Contains(t, errOut, want, id)
	}
}
