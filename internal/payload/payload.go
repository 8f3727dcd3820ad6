// Package payload decides how relq's tools show a message's bytes to a person: as JSON when
// they parse, as text when they are printable UTF-8, else as hex. The CLI and the web
// dashboard share it, so a payload reads the same in a terminal and in a browser.
package payload

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is how a payload is shown.
type Kind string

// The kinds of payload.
const (
	Empty  Kind = "empty"
	JSON   Kind = "JSON"
	Text   Kind = "text"
	Binary Kind = "binary, hex dump"
)

// IsJSON reports whether p is one JSON value (in valid UTF-8).
func IsJSON(p []byte) bool {
	return len(p) > 0 && utf8.Valid(p) && json.Valid(p)
}

// IsText reports whether p reads as text: valid UTF-8 whose characters are printable,
// newlines and tabs (and a trailing carriage return) allowed.
func IsText(p []byte) bool {
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

// KindOf names how p is shown.
func KindOf(p []byte) Kind {
	switch {
	case len(p) == 0:
		return Empty
	case IsJSON(p):
		return JSON
	case IsText(p):
		return Text
	}
	return Binary
}

// Head is p's first n bytes at most, cut back to a whole UTF-8 character: a prefix that is
// still text when p is.
func Head(p []byte, n int) []byte {
	n = min(n, len(p))
	for n < len(p) && n > 0 && !utf8.RuneStart(p[n]) {
		n--
	}
	return p[:n]
}

// Format returns p whole as a person reads it: JSON indented by two spaces, text as it is
// (CRLF line ends made LF), anything else as a hex dump. It does not escape for any medium:
// the caller escapes for a terminal or for HTML.
func Format(p []byte) (Kind, string) {
	k := KindOf(p)
	switch k {
	case JSON:
		var b bytes.Buffer
		_ = json.Indent(&b, p, "", "  ") // p is valid JSON
		return k, b.String()
	case Text:
		return k, strings.ReplaceAll(string(p), "\r\n", "\n")
	case Binary:
		return k, HexDump(p)
	}
	return k, ""
}

// HexDump is p as hexdump -C shows it: offsets, bytes in hex and as ASCII.
func HexDump(p []byte) string { return strings.TrimSuffix(hex.Dump(p), "\n") }
