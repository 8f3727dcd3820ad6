package cli

// Output helpers of the tool commands: aligned tables, ages, and text from Redis made safe to
// print (a reason or a payload can hold anything, terminal escape sequences included).

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// table writes rows aligned in columns separated by two spaces. With a width, the last
// column (a reason, a payload, a list of groups) is cut so that a row fits it; show commands
// print such cells whole.
type table struct {
	w     io.Writer
	width int
	rows  [][]string
}

// minLastColumn is what the last column keeps however wide the columns before it are.
const minLastColumn = 16

// pipedCell bounds the last column of a table written where the width is unknown (a file, a
// pipe): scripts read the whole line, reasons included, but a megabyte payload stays out of it.
const pipedCell = 1000

func newTable(w io.Writer, width int, header ...string) *table {
	t := &table{w: w, width: width}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) flush() error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r[:max(len(r)-1, 0)] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		used := 0
		for i, c := range r {
			if i < len(r)-1 {
				b.WriteString(c)
				pad := widths[i] - utf8.RuneCountInString(c) + 2
				b.WriteString(strings.Repeat(" ", pad))
				used += widths[i] + 2
				continue
			}
			if t.width > 0 {
				c = cut(c, max(t.width-used, minLastColumn))
			} else {
				c = cut(c, pipedCell)
			}
			b.WriteString(c)
		}
		b.WriteByte('\n')
	}
	t.rows = t.rows[:0]
	_, err := io.WriteString(t.w, b.String())
	return err
}

// cut shortens s to n characters, the last of them "…", when it is longer.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n-1]) + "…"
}

// widthOf is the width tables cut to on out: a terminal's, or 0 (unknown: a file or a pipe),
// where lines stay whole up to pipedCell, so a script reading them gets every reason.
func widthOf(env Env, out io.Writer) int {
	return max(env.Width(out), 0)
}

// terminalWidth is the width of the terminal w is, or 0.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		return ttyWidth(f)
	}
	return 0
}

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

// isTerminal reports whether w is a terminal, where the live stats redraw the screen.
func isTerminal(w io.Writer) bool { return isTerminalFile(w) }

// isTerminalReader reports whether r is a terminal, which echoes what the user types.
func isTerminalReader(r io.Reader) bool { return isTerminalFile(r) }

func isTerminalFile(v any) bool {
	f, ok := v.(*os.File)
	return ok && isTTY(f)
}
