package streams

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/relq/relq/backend"
)

// A cursor of Messages holds the state it lists and the four parts that messages.lua takes
// (where each source of the state goes on), joined and base64url-encoded into one opaque
// token. Each part is checked before it reaches a script, so that a cursor no page returned
// fails with backend.ErrBadCursor rather than a Redis error.

// cursorParts says, per state, what each part holds: 's' a score (ms), 'p' a padded entry ID
// (a retry member), 'i' an entry ID, 'c' a consumer name (any), 'n' consumer names (any,
// joined by newlines: the pending consumers listed whole), '-' nothing. Parts come in pairs
// where a ZSET is paged (score and member) and in the pending state (the deadline a consumer
// was ordered by, and the consumer): both are set or neither.
var cursorParts = map[backend.MessageState]string{
	backend.StateReady:   "spi-",
	backend.StateDelayed: "spsi",
	backend.StatePending: "scin",
	backend.StateDead:    "i---",
}

func encodeCursor(state backend.MessageState, parts []string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(string(state) + "\x00" + strings.Join(parts, "\x00")))
}

func decodeCursor(state backend.MessageState, cursor string) ([]string, error) {
	if cursor == "" {
		return []string{"", "", "", ""}, nil
	}
	bad := fmt.Errorf("streams: cursor %q of a %s listing: %w", cursor, state, backend.ErrBadCursor)
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, bad
	}
	fields := strings.Split(string(raw), "\x00")
	kinds := cursorParts[state]
	if len(fields) != 5 || fields[0] != string(state) {
		return nil, bad
	}
	parts := fields[1:]
	for i, p := range parts {
		ok := true
		switch kinds[i] {
		case 's':
			_, err := strconv.ParseUint(p, 10, 53)
			ok = p == "" || err == nil
		case 'p':
			ok = p == "" || padded(p)
		case 'i':
			_, canonical := parseID(p)
			ok = p == "" || canonical
		case 'c', 'n':
			// Any name: another program's consumers hold entries too.
		case '-':
			ok = p == ""
		}
		if !ok {
			return nil, bad
		}
	}
	// A ZSET position is a score and a member together.
	for i := 0; i+1 < 4; i += 2 {
		if kinds[i] == 's' && (parts[i] == "") != (parts[i+1] == "") {
			return nil, bad
		}
	}
	return parts, nil
}

// padded reports whether m is an entry ID in the retry ZSET's form: both parts 20 digits.
func padded(m string) bool {
	ms, seq, ok := strings.Cut(m, "-")
	return ok && len(ms) == 20 && len(seq) == 20 && digits(ms) && digits(seq)
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// parseID returns id in Redis's form ("<ms>-<seq>", no leading zeros) and whether id was
// already in it; "" when id is no entry ID.
func parseID(id string) (string, bool) {
	ms, seq, ok := strings.Cut(id, "-")
	if !ok {
		return "", false
	}
	m, err1 := strconv.ParseUint(ms, 10, 64)
	s, err2 := strconv.ParseUint(seq, 10, 64)
	if err1 != nil || err2 != nil {
		return "", false
	}
	canon := strconv.FormatUint(m, 10) + "-" + strconv.FormatUint(s, 10)
	return canon, canon == id
}
