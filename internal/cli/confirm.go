package cli

// Questions to the user: the confirmation before anything deleted for good, and msg ls's
// "more" between pages.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// confirm asks question (on standard error) and reports whether the answer (from standard
// input) is yes. yes (--yes) skips the question. Standard input that is not a terminal gets
// no question, as nobody would see it: verb refuses with an error that names --yes.
func confirm(env Env, yes bool, verb, question string) (bool, error) {
	if yes {
		return true, nil
	}
	if !env.InIsTerminal(env.In) {
		return false, fmt.Errorf("%s deletes for good and asks first, but standard input is not a terminal: "+
			"pass --yes to go ahead without asking", verb)
	}
	fmt.Fprintf(env.Err, "%s [y/N] ", question)
	answer, ok := readLine(bufio.NewReader(env.In))
	if !ok {
		fmt.Fprintln(env.Err) // end of input: end the question's line
	}
	switch strings.ToLower(answer) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// confirmDelete asks question as confirm does, for a verb that deletes: it returns nil to go
// ahead; an answer no prints "Nothing deleted." on out and ends verb with errNotConfirmed.
func confirmDelete(env Env, out io.Writer, yes bool, verb, question string) error {
	ok, err := confirm(env, yes, verb, question)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintln(out, "Nothing deleted.")
		return errNotConfirmed(verb)
	}
	return nil
}

// errNotConfirmed ends a destructive verb whose question was answered no.
func errNotConfirmed(verb string) error { return errors.New(verb + " not confirmed") }

// readLine reads one line, trimmed; false at the end of input before any.
func readLine(r *bufio.Reader) (string, bool) {
	line, err := r.ReadString('\n')
	if err != nil && line == "" {
		return "", false
	}
	return strings.TrimSpace(line), true
}

// pager asks, between the pages of a listing on a terminal, whether to go on.
type pager struct {
	out io.Writer
	in  *bufio.Reader
}

func newPager(env Env, out io.Writer) *pager {
	return &pager{out: out, in: bufio.NewReader(env.In)}
}

// more asks for the next page: Enter, y or a space goes on; q, n or the end of input stops.
func (p *pager) more(count int) bool {
	fmt.Fprintf(p.out, "-- more: Enter for the next %d, q to stop -- ", count)
	answer, ok := readLine(p.in)
	if !ok {
		fmt.Fprintln(p.out)
		return false
	}
	switch strings.ToLower(answer) {
	case "", "y", "yes":
		return true
	}
	return false
}
