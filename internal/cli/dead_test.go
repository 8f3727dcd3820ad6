package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// fillDead leaves 5 dead letters in orders/billing (list) with reasons "reason-1".."reason-5"
// (oldest first) and one ready message, and returns their IDs.
func fillDead(f *fixture) []string {
	f.group(f.list, "orders", "billing")
	f.publish(f.list, "orders", 6, 0)
	var ids []string
	for i, d := range f.claim(f.list, "orders", "billing", 5) {
		f.bury(f.list, "orders", "billing", "reason-"+string(rune('1'+i)), d)
		ids = append(ids, d.ID)
	}
	return ids
}

func TestDeadLsPagesWithReasons(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := fillDead(f)

	code, out, _ := f.run("dead", "ls", "--topic", "orders", "--group", "billing")
	require.Equal(t, 0, code)
	require.Contains(t, out, `Dead letters of orders/billing (list backend, prefix "`+f.prefix+`"): 1-5 of 5, oldest first`)
	require.Regexp(t, `(?m)^ID\s+ATTEMPTS\s+DEAD-LETTERED AT\s+UUID\s+REASON$`, out)
	for i, id := range ids {
		require.Regexp(t, `(?m)^`+id+`\s+1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+\s+uuid-`+string(rune('a'+i))+`\s+reason-`+string(rune('1'+i))+`$`, out)
	}
	require.NotContains(t, out, "More:")

	code, out, _ = f.run("dead", "ls", "--topic", "orders", "--group", "billing", "--limit", "2", "--offset", "1")
	require.Equal(t, 0, code)
	require.Contains(t, out, "2-3 of 5, oldest first")
	require.Regexp(t, `(?m)^`+ids[1]+`\s.*reason-2$`, out)
	require.Regexp(t, `(?m)^`+ids[2]+`\s.*reason-3$`, out)
	require.NotContains(t, out, "reason-1")
	require.NotContains(t, out, "reason-4")
	require.Contains(t, out, "More: --offset 3")

	code, out, _ = f.run("dead", "ls", "--topic", "orders", "--group", "billing", "--offset", "9")
	require.Equal(t, 0, code)
	require.Contains(t, out, "No dead letters from offset 9 in orders/billing")

	f.group(f.list, "orders", "audit")
	code, out, _ = f.run("dead", "ls", "--topic", "orders", "--group", "audit")
	require.Equal(t, 0, code)
	require.Contains(t, out, "No dead letters in orders/audit")
}

// Whatever a message holds, show prints it without letting it drive the terminal.
func TestDeadShowPrintsTheMessageSafely(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.group(f.list, "t", "g")
	f.publishOne(f.list, "t", backend.Envelope{UUID: "u-text", Metadata: map[string]string{"order": "42", "evil": "\x1b[31mred"},
		Payload: []byte("{\"a\":1}\nline two\n")})
	f.publishOne(f.list, "t", backend.Envelope{UUID: "u-bin", Payload: []byte{0x00, 0x01, 0xff, 'h', 'i'}})
	f.publishOne(f.list, "t", backend.Envelope{UUID: "stays ready, so the topic shows it is the list backend's"})
	ds := f.claim(f.list, "t", "g", 2)
	f.bury(f.list, "t", "g", "boom\n\x1b]0;pwned\x07", ds...)

	code, out, _ := f.run("dead", "show", "--topic", "t", "--group", "g", ds[0].ID)
	require.Equal(t, 0, code)
	require.NotContains(t, out, "\x1b")
	require.Contains(t, out, "Dead letter "+ds[0].ID+" of t/g (list backend")
	require.Contains(t, out, "  attempts:         1\n")
	require.Regexp(t, `dead-lettered at: \d{4}-\d\d-\d\d `, out)
	require.Contains(t, out, `  reason:           boom\n\x1b]0;pwned\a`+"\n")
	require.Contains(t, out, "  uuid:             u-text\n")
	require.Contains(t, out, "  metadata:         2\n    evil   \\x1b[31mred\n    order  42\n")
	require.Contains(t, out, "  payload:          17 bytes, text\n    {\"a\":1}\n    line two\n")

	code, out, _ = f.run("dead", "show", "--topic", "t", "--group", "g", ds[1].ID)
	require.Equal(t, 0, code)
	require.Contains(t, out, "  payload:          5 bytes, binary, hex dump\n    00000000  00 01 ff 68 69")

	code, out, _ = f.run("dead", "show", "--topic", "t", "--group", "g", ds[1].ID, "--raw")
	require.Equal(t, 0, code)
	require.Equal(t, "\x00\x01\xffhi", out)

	code, _, errOut := f.run("dead", "show", "--topic", "t", "--group", "g", "999")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `no dead letter "999" in t/g (list backend, prefix "`+f.prefix+`"), which holds 2`)
}

func TestDeadRequeueMovesLettersBackToReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := fillDead(f)

	code, out, _ := f.run("dead", "requeue", "--topic", "orders", "--group", "billing", ids[0], ids[1])
	require.Equal(t, 0, code)
	require.Contains(t, out, "Requeued 2 dead letters of orders/billing (list backend")
	st := f.stats(f.list, "orders", "billing")
	require.Equal(t, int64(3), st.Ready)
	require.Equal(t, int64(3), st.Dead)

	// Requeued letters come back with their attempts reset (one stays ready, so that the
	// topic's keys still show the list backend).
	for _, d := range f.claim(f.list, "orders", "billing", 3)[1:] {
		require.Contains(t, ids[:2], d.ID)
		require.Equal(t, 1, d.Attempt)
	}
	f.publish(f.list, "orders", 2, 0)

	code, out, errOut := f.run("dead", "requeue", "--topic", "orders", "--group", "billing", ids[2], "999")
	require.Equal(t, 1, code)
	require.Contains(t, out, "Requeued 1 dead letter of orders/billing")
	require.Contains(t, errOut, "1 of the 2 IDs given are not dead letters of orders/billing")

	code, out, _ = f.run("dead", "requeue", "--topic", "orders", "--group", "billing", "--all")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Requeued 2 dead letters")
	st = f.stats(f.list, "orders", "billing")
	require.Zero(t, st.Dead)
	require.Equal(t, int64(5), st.Ready) // 2 published, 3 requeued

	code, _, errOut = f.run("dead", "requeue", "--topic", "orders", "--group", "billing")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "give the IDs of the dead letters to requeue, or --all")
}

func TestDeadPurgeAsksFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillDead(f)
	args := []string{"dead", "purge", "--topic", "orders", "--group", "billing", "--all"}

	for _, answer := range []string{"n\n", "", "whatever\n"} {
		code, out, errOut := f.runIn(answer, args...)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, `Delete all 5 dead letters of orders/billing (list backend, prefix "`+f.prefix+`") at redis://`)
		require.Contains(t, errOut, "for good? [y/N] ")
		require.Contains(t, errOut, "relq: purge not confirmed")
		require.Contains(t, out, "Nothing purged.")
		require.Equal(t, int64(5), f.stats(f.list, "orders", "billing").Dead)
	}

	code, out, _ := f.runIn("y\n", args...)
	require.Equal(t, 0, code)
	require.Contains(t, out, "Purged 5 dead letters of orders/billing")
	st := f.stats(f.list, "orders", "billing")
	require.Zero(t, st.Dead)
	require.Equal(t, int64(1), st.Ready, "purge touches dead letters only")

	code, out, _ = f.run(append(args, "--yes")...)
	require.Equal(t, 0, code)
	require.Contains(t, out, "No dead letters in orders/billing")

	code, _, errOut := f.run("dead", "purge", "--topic", "orders", "--group", "billing")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: give the IDs of the dead letters to purge, or --all to purge every one\nusage: relq dead purge")
	code, _, errOut = f.run("dead", "purge", "--topic", "orders", "--group", "billing", "--all", "7")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "give the IDs of the dead letters to purge, or --all")
}

// purge by ID asks first, deletes only what is a dead letter of the group when it runs, and
// fails naming how many IDs it left: one requeued and claimed meanwhile stays pending.
func TestDeadPurgeByIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := fillDead(f)
	n, err := f.list.RequeueDeadLetters(context.Background(), &backend.RequeueParams{Topic: "orders", Group: "billing", IDs: ids[4:]})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	f.claim(f.list, "orders", "billing", 2) // ids[4] and the message that was ready: pending now
	base := []string{"dead", "purge", "--topic", "orders", "--group", "billing"}
	chosen := append(append([]string{}, base...), ids[1], ids[0], ids[4], "999", ids[0])

	code, out, errOut := f.runIn("n\n", chosen...)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "Delete the 4 dead letters "+ids[1]+", "+ids[0]+", "+ids[4]+", 999"+
		` of orders/billing (list backend, prefix "`+f.prefix+`") at redis://`)
	require.Contains(t, errOut, "for good? [y/N] ")
	require.Contains(t, out, "Nothing purged.")
	require.Equal(t, int64(4), f.stats(f.list, "orders", "billing").Dead)

	code, out, errOut = f.runIn("y\n", chosen...)
	require.Equal(t, 1, code)
	require.Contains(t, out, "Purged 2 dead letters of orders/billing (list backend")
	require.Contains(t, errOut, "relq: 2 of the 4 IDs given are not dead letters of orders/billing (relq dead ls lists them)")
	st := f.stats(f.list, "orders", "billing")
	require.Equal(t, int64(2), st.Dead)
	require.Equal(t, int64(2), st.Pending, "the requeued letter, claimed since, is not purged")
	dls, err := f.list.DeadLetters(context.Background(), &backend.DeadLettersParams{Topic: "orders", Group: "billing"})
	require.NoError(t, err)
	require.Len(t, dls, 2)
	require.Equal(t, []string{ids[2], ids[3]}, []string{dls[0].ID, dls[1].ID})

	code, out, errOut = f.run(append(base, ids[2], "-y")...)
	require.Equal(t, 0, code)
	require.NotContains(t, errOut, "[y/N]")
	require.Contains(t, out, "Purged 1 dead letter of orders/billing")
	code, out, errOut = f.runIn("y\n", append(base, ids[3])...)
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "Delete dead letter "+ids[3]+" of orders/billing")
	require.Contains(t, out, "Purged 1 dead letter of orders/billing")

	code, out, errOut = f.run(append(base, ids[3], "--yes")...)
	require.Equal(t, 1, code)
	require.Contains(t, out, "No dead letters in orders/billing")
	require.Contains(t, errOut, "relq: 1 of the 1 IDs given are not dead letters of orders/billing")
	require.Equal(t, int64(2), f.stats(f.list, "orders", "billing").Pending)
}

func TestPurgeIDsWhat(t *testing.T) {
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprint(i+1))
	}
	require.Equal(t, "dead letter 1", purgeIDsWhat(ids[:1]))
	require.Equal(t, "the 2 dead letters 1, 2", purgeIDsWhat(ids[:2]))
	require.Equal(t, "the 12 dead letters 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more", purgeIDsWhat(ids))
	require.Equal(t, `dead letter a\x1b[31m`, purgeIDsWhat([]string{"a\x1b[31m"}), "escaped for the terminal")
}

func TestDeadPurgeWithYesDoesNotAsk(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillDead(f)
	code, out, errOut := f.run("dead", "purge", "--topic", "orders", "--group", "billing", "--all", "-y")
	require.Equal(t, 0, code)
	require.NotContains(t, errOut, "[y/N]")
	require.Contains(t, out, "Purged 5 dead letters")
}

// Nobody sees a question asked on an input that is no terminal (a pipe, a file, a CI job):
// purge refuses rather than read an answer from there.
func TestDeadPurgeRefusesWithoutATerminalOrYes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillDead(f)
	code, _, errOut := runTool(t, f.ctx, Env{Getenv: urlEnv(f.url), In: strings.NewReader("y\n")},
		"dead", "purge", "--topic", "orders", "--group", "billing", "--all", "--prefix", f.prefix)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: dead purge deletes for good and asks first, but standard input is not a terminal: pass --yes")
	require.NotContains(t, errOut, "[y/N]")
	require.Equal(t, int64(5), f.stats(f.list, "orders", "billing").Dead)
}

// A drained list topic is still the list backend's: its dead letter is listed and requeued
// without naming the backend, and the zset backend does not claim it.
func TestDeadOnADrainedListTopic(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.publish(f.list, "drained", 1, 0)
	f.bury(f.list, "drained", backend.DefaultGroup, "poison", f.claim(f.list, "drained", backend.DefaultGroup, 1)...)
	base := []string{"--topic", "drained", "--group", backend.DefaultGroup}

	code, out, _ := f.run(append([]string{"dead", "ls"}, base...)...)
	require.Equal(t, 0, code)
	require.Contains(t, out, "(list backend")
	require.Regexp(t, regexp.MustCompile(`(?m)\s+poison$`), out)

	code, _, errOut := f.run(append([]string{"dead", "ls", "--backend", "zset"}, base...)...)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `topic "drained" not found`)

	code, _, _ = f.run(append([]string{"dead", "requeue", "--all"}, base...)...)
	require.Equal(t, 0, code)
	require.Equal(t, int64(1), f.stats(f.list, "drained", backend.DefaultGroup).Ready)
}

// readerFunc runs a function on the first Read, then reads from its Reader: the moment a
// prompt is answered.
type readerFunc struct {
	before func()
	io.Reader
}

func (r *readerFunc) Read(p []byte) (int, error) {
	if r.before != nil {
		r.before()
		r.before = nil
	}
	return r.Reader.Read(p)
}

// A dead letter that arrives while the prompt waits is not purged: the confirmation was for
// the letters counted.
func TestDeadPurgeDeletesOnlyWhatWasConfirmed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fillDead(f)
	in := &readerFunc{Reader: strings.NewReader("y\n"), before: func() {
		f.bury(f.list, "orders", "billing", "late", f.claim(f.list, "orders", "billing", 1)...)
	}}
	code, out, errOut := runTool(t, context.Background(), Env{Getenv: urlEnv(f.url), In: in, InIsTerminal: onTerminal},
		"dead", "purge", "--topic", "orders", "--group", "billing", "--all", "--prefix", f.prefix)
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "Delete all 5 dead letters")
	require.Contains(t, out, "Purged 5 dead letters")
	dls, err := f.list.DeadLetters(context.Background(), &backend.DeadLettersParams{Topic: "orders", Group: "billing"})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, "late", dls[0].Reason)
}
