package web

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/payload"
)

// previewLen bounds a payload's preview in a listing, in characters; a payload up to
// previewJSONMax bytes is checked for JSON (larger ones show as text or hex).
const (
	previewLen     = 120
	previewJSONMax = 64 << 10
)

// preview is a one-line glimpse of a message for a listing: compact JSON, text, or hex.
func preview(m backend.MessageInfo) string {
	switch {
	case m.BodyMissing:
		return "(body missing)"
	case m.Err != nil:
		return "(undecodable: " + m.Err.Error() + ")"
	}
	p := m.Envelope.Payload
	if len(p) == 0 {
		return "(empty)"
	}
	if len(p) <= previewJSONMax && payload.IsJSON(p) {
		var b bytes.Buffer
		_ = json.Compact(&b, p)
		return cut(b.String(), false)
	}
	head := payload.Head(p, 4*previewLen)
	if payload.IsText(head) {
		return cut(strings.Join(strings.Fields(string(head)), " "), len(head) < len(p))
	}
	return cut("hex "+hex.EncodeToString(p[:min(len(p), previewLen/2)]), len(p) > previewLen/2)
}

// cut shortens s to previewLen characters, marking what it cut, or what was cut before.
func cut(s string, more bool) string {
	if utf8.RuneCountInString(s) > previewLen {
		s, more = string([]rune(s)[:previewLen]), true
	}
	if more {
		s += "…"
	}
	return s
}
