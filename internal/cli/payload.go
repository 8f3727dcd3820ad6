package cli

// How the commands print a message's payload: as JSON when it parses (indented by show,
// compact in a table cell), as text when it is UTF-8 text, else as hex. Whatever the bytes,
// nothing printed can drive the terminal: non-printable characters are shown escaped (in
// JSON as JSON escapes, so that it stays JSON).

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/relq/relq/internal/payload"
)

// cellBytes bounds how much of a payload a table cell is made from: the cell is cut to the
// width anyway, and a page of large payloads should not be escaped in full.
const cellBytes = 4096

// bytesKind names how writeBytes prints p.
func bytesKind(p []byte) string { return string(payload.KindOf(p)) }

// writeBytes prints p indented, whole: JSON indented, text as it is, anything else as a hex
// dump.
func writeBytes(w io.Writer, indent string, p []byte) {
	kind, body := payload.Format(p)
	switch kind {
	case payload.JSON:
		body = jsonSafe(body)
	case payload.Text:
		body = strings.TrimSuffix(escape(body, true), "\n")
	}
	for _, line := range strings.Split(body, "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, line)
	}
}

// bytesCell is p in one table cell: compact JSON, escaped text or hex digits.
func bytesCell(p []byte) string {
	switch {
	case len(p) == 0:
		return "(empty)"
	case len(p) <= cellBytes && payload.IsJSON(p):
		var b bytes.Buffer
		_ = json.Compact(&b, p)
		return jsonSafe(b.String())
	case payload.IsText(payload.Head(p, cellBytes)):
		head := payload.Head(p, cellBytes)
		s := oneLine(string(head))
		if len(head) < len(p) {
			s += "…"
		}
		return s
	}
	n := min(len(p), cellBytes/2)
	s := "hex " + hex.EncodeToString(p[:n])
	if n < len(p) {
		s += "…"
	}
	return s
}

// jsonSafe shows the non-printable characters of JSON text (they can only be in its
// strings) as JSON escapes, so that it stays JSON, backslashes and all.
func jsonSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || unicode.IsPrint(r):
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
