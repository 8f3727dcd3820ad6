package cli

// Output helpers of the tool commands: aligned tables, ages, and text from Redis made safe to
// print (a reason or a payload can hold anything, terminal escape sequences included).

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// table writes rows aligned in columns separated by two spaces.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// age prints a duration from Stats: "-" for none, milliseconds below a second, tenths of a
// second below a minute, whole seconds above.
func age(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// timestamp prints a time from Redis in the local zone, to the millisecond.
func timestamp(t time.Time) string {
	return t.Local().Format("2006-01-02 15:04:05.000 MST")
}

func num(n int64) string { return strconv.FormatInt(n, 10) }

// oneLine makes s safe for one table cell: every character that is not printable (control
// characters, newlines, tabs, escape sequences, invalid UTF-8) is shown escaped, Go style.
func oneLine(s string) string {
	return escape(s, false)
}

// escape shows the non-printable characters of s escaped; with keepLines, newlines and tabs
// are kept as they are.
func escape(s string, keepLines bool) string {
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\\':
			b.WriteString(`\\`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// isText reports whether p reads as text: valid UTF-8 whose characters are printable,
// newlines and tabs (and a trailing carriage return) allowed.
func isText(p []byte) bool {
	if !utf8.Valid(p) {
		return false
	}
	for _, r := range string(p) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// writeBytes prints p indented: as text when it reads as text, else as a hex dump.
func writeBytes(w io.Writer, indent string, p []byte) {
	var body string
	if isText(p) {
		body = escape(strings.ReplaceAll(string(p), "\r\n", "\n"), true)
		body = strings.TrimSuffix(body, "\n")
	} else {
		body = strings.TrimSuffix(hex.Dump(p), "\n")
	}
	for _, line := range strings.Split(body, "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, line)
	}
}

// bytesKind names how writeBytes prints p.
func bytesKind(p []byte) string {
	switch {
	case len(p) == 0:
		return "empty"
	case isText(p):
		return "text"
	}
	return "binary, hex dump"
}

// isTerminal reports whether w is a terminal, where the live stats redraw the screen.
func isTerminal(w io.Writer) bool { return isTerminalFile(w) }

// isTerminalReader reports whether r is a terminal, which echoes what the user types.
func isTerminalReader(r io.Reader) bool { return isTerminalFile(r) }

func isTerminalFile(v any) bool {
	f, ok := v.(*os.File)
	return ok && isTTY(f)
}
