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
	"unicode/utf8"
)

// cellBytes bounds how much of a payload a table cell is made from: the cell is cut to the
// width anyway, and a page of large payloads should not be escaped in full.
const cellBytes = 4096

// isJSON reports whether p is one JSON value (in valid UTF-8).
func isJSON(p []byte) bool {
	return len(p) > 0 && utf8.Valid(p) && json.Valid(p)
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

// bytesKind names how writeBytes prints p.
func bytesKind(p []byte) string {
	switch {
	case len(p) == 0:
		return "empty"
	case isJSON(p):
		return "JSON"
	case isText(p):
		return "text"
	}
	return "binary, hex dump"
}

// writeBytes prints p indented, whole: JSON indented, text as it is, anything else as a hex
// dump.
func writeBytes(w io.Writer, indent string, p []byte) {
	var body string
	switch {
	case isJSON(p):
		var b bytes.Buffer
		_ = json.Indent(&b, p, "", "  ") // p is valid JSON
		body = jsonSafe(b.String())
	case isText(p):
		body = escape(strings.ReplaceAll(string(p), "\r\n", "\n"), true)
		body = strings.TrimSuffix(body, "\n")
	default:
		body = strings.TrimSuffix(hex.Dump(p), "\n")
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
	case len(p) <= cellBytes && isJSON(p):
		var b bytes.Buffer
		_ = json.Compact(&b, p)
		return jsonSafe(b.String())
	case isText(p[:textPrefix(p)]):
		s := oneLine(string(p[:textPrefix(p)]))
		if textPrefix(p) < len(p) {
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

// textPrefix is the length of p's first cellBytes bytes, cut back to a whole UTF-8
// character.
func textPrefix(p []byte) int {
	n := min(len(p), cellBytes)
	for n < len(p) && n > 0 && !utf8.RuneStart(p[n]) {
		n--
	}
	return n
}
