package cli

// The topic, group and msg verbs on the real backends. They need the backends' Admin API
// (backend.Admin), written for the same issue as these verbs: on a build without it they are
// skipped.

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
)

// Every adapter implements backend.Admin, which the CLI's verbs need.
var (
	_ backend.Admin = (*list.Backend)(nil)
	_ backend.Admin = (*zset.Backend)(nil)
	_ backend.Admin = (*streams.Backend)(nil)
)

// eachBackend runs test on each backend of a fixture of its own, in parallel.
func eachBackend(t *testing.T, test func(t *testing.T, f *fixture, b backend.Backend)) {
	for _, name := range backendNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			test(t, f, map[string]backend.Backend{"list": f.list, "zset": f.zset, "streams": f.stream}[name])
		})
	}
}

// runOn runs relq with args on backend b only.
func (f *fixture) runOn(b backend.Backend, args ...string) (int, string, string) {
	f.t.Helper()
	return f.run(append(args, "--backend", b.Name())...)
}

// cursorIn is the cursor of the "More: --cursor C" line of out, unquoted, or "".
func cursorIn(out string) string {
	m := regexp.MustCompile(`(?m)^More: --cursor (.+)$`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	c := m[1]
	if strings.HasPrefix(c, "'") {
		c = strings.ReplaceAll(strings.Trim(c, "'"), `'\''`, "'")
	}
	return c
}

// idsIn are the IDs of the table rows of out, in order (the first column under "ID").
func idsIn(out string) []string {
	var ids []string
	rows := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "ID "):
			rows = true
		case line == "" || strings.HasPrefix(line, "More:"):
			rows = false
		case rows:
			ids = append(ids, strings.Fields(line)[0])
		}
	}
	return ids
}

// fillStates leaves orders/billing with one message in each state and returns their IDs:
// ready, delayed, pending (held by c1) and dead (reason "poison").
func fillStates(f *fixture, b backend.Backend) (ready, delayed, pending, dead string) {
	f.group(b, "orders", "billing")
	ids := f.publish(b, "orders", 3, 0)
	delayed = f.publishDelayed(b, "orders", backend.Envelope{UUID: "u-later", Payload: []byte(`{"at":"later"}`)}, time.Hour)
	ds := f.claim(b, "orders", "billing", 2)
	f.bury(b, "orders", "billing", "poison", ds[1])
	return ids[2], delayed, ds[0].ID, ds[1].ID
}

// publishDelayed publishes one message due after delay.
func (f *fixture) publishDelayed(b backend.Backend, topic string, env backend.Envelope, delay time.Duration) string {
	f.t.Helper()
	res, err := b.Publish(f.ctx, &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{{Envelope: env, Delay: delay}}})
	ids := res.IDs
	require.NoError(f.t, err)
	return ids[0]
}

func TestMsgLsListsEveryState(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, f *fixture, b backend.Backend) {
		ready, delayed, pending, dead := fillStates(f, b)
		where := `orders/billing (` + b.Name() + ` backend, prefix "` + f.prefix + `")`

		code, out, _ := f.runOn(b, "msg", "ls", "orders", "billing")
		require.Equal(t, 0, code)
		require.Contains(t, out, "Ready messages of "+where+": 1 in all, in delivery order")
		require.Equal(t, []string{ready}, idsIn(out))
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(ready)+`\s+0\s.*\suuid-c\s+msg-c$`, out)

		code, out, _ = f.runOn(b, "msg", "ls", "orders", "billing", "--state", "delayed")
		require.Equal(t, 0, code)
		require.Equal(t, []string{delayed}, idsIn(out))
		require.Regexp(t, `\su-later\s+\{"at":"later"\}\n`, out)

		code, out, _ = f.runOn(b, "msg", "ls", "orders", "billing", "--state", "pending")
		require.Equal(t, 0, code)
		require.Equal(t, []string{pending}, idsIn(out))
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(pending)+`\s+c1\s+\d`, out)

		code, out, _ = f.runOn(b, "msg", "ls", "orders", "billing", "--state", "dead")
		require.Equal(t, 0, code)
		require.Equal(t, []string{dead}, idsIn(out))
		require.Regexp(t, `\suuid-b\s+poison\n`, out)
	})
}

func TestMsgShowRunRm(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, f *fixture, b backend.Backend) {
		ready, delayed, pending, dead := fillStates(f, b)
		where := `orders/billing (` + b.Name() + ` backend, prefix "` + f.prefix + `")`

		code, out, _ := f.runOn(b, "msg", "show", "orders", "billing", delayed)
		require.Equal(t, 0, code)
		require.Contains(t, out, "Message "+delayed+" of "+where+"\n  state:            delayed\n")
		require.Contains(t, out, "  payload:          14 bytes, JSON\n    {\n      \"at\": \"later\"\n    }\n")
		code, out, _ = f.runOn(b, "msg", "show", "orders", "billing", pending)
		require.Equal(t, 0, code)
		require.Contains(t, out, "  consumer:         c1\n")
		code, out, _ = f.runOn(b, "msg", "show", "orders", "billing", dead)
		require.Equal(t, 0, code)
		require.Contains(t, out, "  reason:           poison\n")

		code, _, errOut := f.runOn(b, "msg", "run", "orders", "billing", ready)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "message "+ready+" of "+where+" is ready, not delayed")
		code, _, errOut = f.runOn(b, "msg", "run", "orders", "billing", dead)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "is a dead letter, not delayed: relq dead requeue")

		code, out, _ = f.runOn(b, "msg", "run", "orders", "billing", delayed)
		require.Equal(t, 0, code)
		require.Contains(t, out, "Message "+delayed+" of "+where+" is due now")
		st := f.stats(b, "orders", "billing")
		require.Equal(t, int64(2), st.Ready)
		require.Zero(t, st.Delayed)

		for _, id := range []string{ready, pending, dead} {
			code, out, _ = f.runOn(b, "msg", "rm", "orders", "billing", id, "--yes")
			require.Equal(t, 0, code, id)
			require.Contains(t, out, "Deleted message "+id+" of "+where+".")
			code, _, errOut = f.runOn(b, "msg", "show", "orders", "billing", id)
			require.Equal(t, 1, code, id)
			require.Contains(t, errOut, `no message "`+id+`" in `+where)
		}
		for _, state := range backend.States {
			code, out, _ = f.runOn(b, "msg", "ls", "orders", "billing", "--state", string(state))
			require.Equal(t, 0, code)
			if state == backend.StateReady {
				require.Equal(t, []string{delayed}, idsIn(out), "run made it ready; the deleted one is not listed")
			} else {
				require.Empty(t, idsIn(out), state)
			}
		}

		code, _, errOut = f.runOn(b, "msg", "rm", "orders", "billing", "no-such-id", "--yes")
		require.Equal(t, 1, code)
		require.Contains(t, errOut, `no message "no-such-id" in `+where)
	})
}

// Following the printed cursors lists every message once, in delivery order.
func TestMsgLsPagesThroughEveryMessageOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, f *fixture, b backend.Backend) {
		f.group(b, "orders", "billing")
		var want []string
		for range 3 {
			want = append(want, f.publish(b, "orders", 15, 0)...)
		}
		var got []string
		args := []string{"msg", "ls", "orders", "billing", "--count", "20"}
		for pages := 1; ; pages++ {
			code, out, _ := f.runOn(b, args...)
			require.Equal(t, 0, code)
			got = append(got, idsIn(out)...)
			next := cursorIn(out)
			if next == "" {
				require.Equal(t, 3, pages)
				break
			}
			args = []string{"msg", "ls", "orders", "billing", "--count", "20", "--cursor", next}
		}
		require.Equal(t, want, got)

		code, _, errOut := f.runOn(b, "msg", "ls", "orders", "billing", "--cursor", "not-a-cursor")
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "the --cursor given is not one that a page of this listing printed")
	})
}

func TestGroupPauseResumeDelete(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, f *fixture, b backend.Backend) {
		f.group(b, "orders", "billing")
		f.group(b, "orders", "audit")
		f.publish(b, "orders", 2, 0)
		where := `orders/billing (` + b.Name() + ` backend, prefix "` + f.prefix + `")`
		claim := func() int {
			ds, err := b.Claim(f.ctx, &backend.ClaimParams{Topic: "orders", Group: "billing", Consumer: "c1", Count: 1, Lease: time.Minute})
			require.NoError(t, err)
			return len(ds)
		}

		code, out, _ := f.runOn(b, "group", "pause", "orders", "billing")
		require.Equal(t, 0, code)
		require.Contains(t, out, "Paused "+where)
		require.Zero(t, claim())
		code, out, _ = f.runOn(b, "group", "ls", "orders")
		require.Equal(t, 0, code)
		require.Regexp(t, `(?m)^billing\s+paused\s+2\s+0\s+0\s+0\s`, out)
		require.Regexp(t, `(?m)^audit\s+running\s+2\s`, out)
		code, out, _ = f.run("stats", "--topic", "orders")
		require.Equal(t, 0, code)
		require.Regexp(t, `(?m)\sorders\s+billing \(paused\)\s+2\s`, out)

		code, out, _ = f.runOn(b, "group", "resume", "orders", "billing")
		require.Equal(t, 0, code)
		require.Contains(t, out, "Resumed "+where)
		require.Equal(t, 1, claim())

		code, out, _ = f.runOn(b, "group", "delete", "orders", "audit", "--yes")
		require.Equal(t, 0, code)
		require.Contains(t, out, "which held 2 ready messages.")
		require.NotContains(t, out, "last group")
		groups, err := b.GroupNames(f.ctx, "orders")
		require.NoError(t, err)
		require.Equal(t, []string{"billing"}, groups)

		code, out, _ = f.runOn(b, "group", "delete", "orders", "billing", "--yes")
		require.Equal(t, 0, code)
		require.Contains(t, out, "which held 1 ready and 1 pending messages.")
		require.Contains(t, out, "It was the last group of topic orders, which had no backlog: every key of the topic is gone too, but the group's tombstone, which expires after the backend's TombstoneTTL.")
		require.Empty(t, f.keysLeft("orders"))
	})
}

func TestTopicLsShowDeleteWithABacklog(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, f *fixture, b backend.Backend) {
		signups := make([]backend.OutMessage, 3)
		for i := range signups {
			signups[i].Envelope = backend.Envelope{UUID: "signup-" + strconv.Itoa(i), Payload: []byte("{}")}
		}
		_, err := b.Publish(f.ctx, &backend.PublishParams{Topic: "signups", Messages: signups})
		require.NoError(t, err) // no group: the backlog keeps them
		f.group(b, "orders", "billing")
		f.publish(b, "orders", 2, 0)

		code, out, _ := f.runOn(b, "topic", "ls")
		require.Equal(t, 0, code)
		require.Regexp(t, `(?m)^`+b.Name()+`\s+orders\s+0\s+billing$`, out)
		require.Regexp(t, `(?m)^`+b.Name()+`\s+signups\s+3\s+$`, out)

		code, out, _ = f.runOn(b, "topic", "show", "signups")
		require.Equal(t, 0, code)
		require.Contains(t, out, "  backlog:  3 messages, kept for the first group that registers\n  dropped:  none\n  groups:   0\n")

		code, out, _ = f.runOn(b, "topic", "delete", "orders", "--yes")
		require.Equal(t, 0, code)
		require.Contains(t, out, "1 group (billing) with 2 ready messages, and a backlog of 0.")
		require.Empty(t, f.keysLeft("orders"))
		require.NotEmpty(t, f.topicKeys("signups"), "another topic's keys are not touched")

		code, out, _ = f.runOn(b, "topic", "rm", "signups", "-y")
		require.Equal(t, 0, code)
		require.Contains(t, out, "no groups, and a backlog of 3.")
		require.Empty(t, f.topicKeys("signups"))

		code, _, errOut := f.runOn(b, "topic", "show", "signups")
		require.Equal(t, 1, code)
		require.Contains(t, errOut, `topic "signups" not found`)
	})
}

// topicKeys are the keys of topic under the fixture's prefix.
func (f *fixture) topicKeys(topic string) []string {
	f.t.Helper()
	var keys []string
	iter := f.c.Scan(context.Background(), 0, "{"+f.prefix+":"+topic+"}*", 1000).Iterator()
	for iter.Next(context.Background()) {
		keys = append(keys, iter.Val())
	}
	require.NoError(f.t, iter.Err())
	return keys
}
