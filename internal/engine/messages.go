package engine

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/relq/relq/backend"
)

// AdminDepth is how far Admin reads into a queue that Redis can read only by position or
// search only by scanning, in one call: a listing page of the list backend's ready LIST
// starts no deeper (backend.ErrTooDeep past it), and a search by ID for a message there, or in
// the zset backend's queue or delayed members, looks at no more than this many of each.
const AdminDepth = 10_000

// MessagesCountDefault is the page size when MessagesParams.Count is zero.
const MessagesCountDefault = 100

// messageVerbs are the Admin scripts of this file and messages_find.go (lua/<verb>.lua).
var messageVerbs = []string{"messages", "message", "deletemessage", "runmessage"}

// Messages reads one page of a group's messages in one state, in one read-only script. ZSET
// states (pending, dead, delayed, the zset backend's ready) page by (score, member) after the
// last entry the page before looked at, O(page · log² N); the list backend's ready LIST pages
// by position from the consume end, at most AdminDepth deep. Messages marked deleted wait
// hidden in ready until a claim drops them. A page may hold fewer than Count (hidden entries
// count against the entries it looks at) and still have a Next.
func (e *Engine) Messages(ctx context.Context, p *backend.MessagesParams) (backend.MessagePage, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return backend.MessagePage{}, err
	}
	if _, err := backend.ParseState(string(p.State)); err != nil {
		return backend.MessagePage{}, &backend.ConfigError{Field: "MessagesParams.State", Reason: err.Error()}
	}
	if p.Count < 0 {
		return backend.MessagePage{}, &backend.ConfigError{Field: "MessagesParams.Count", Reason: "must not be negative"}
	}
	count := p.Count
	if count == 0 {
		count = MessagesCountDefault
	}
	count = min(count, e.store.BatchSize)
	c, err := parseCursor(p.State, p.Cursor)
	if err != nil {
		return backend.MessagePage{}, err
	}
	res, err := e.run(ctx, "messages", e.Keys(p.Topic, p.Group).all, p.Group, string(p.State),
		c.phase, c.score, c.member, count, AdminDepth).Slice()
	if err != nil {
		return backend.MessagePage{}, e.adminError(err, p.Topic, p.Group, "")
	}
	page := backend.MessagePage{Messages: decodeMessages(p.Topic, p.Group, res[0], res[4:])}
	if phase, _ := res[1].(string); phase != "" {
		page.Next = cursor{state: p.State, phase: phase, score: scoreOf(res[2]), member: str(res[3])}.String()
	}
	return page, nil
}

// cursor is where a listing resumes: after member (at score) in the listing's phase, the
// state's key or part of it the store pages (see messages.lua). Its text is
// "<state>:<phase>:<score>:<member>"; opaque to callers.
type cursor struct {
	state  backend.MessageState
	phase  string
	score  int64
	member string
}

func (c cursor) String() string {
	return fmt.Sprintf("%s:%s:%d:%s", c.state, c.phase, c.score, c.member)
}

// cursorMember is what a cursor's member can hold: a delivery ID or a store's member of one
// (list: "id@ms"; zset: "<rank>:<id>" or "<due><n><id>").
var cursorMember = regexp.MustCompile(`^[0-9A-Z:@]{0,64}$`)

// parseCursor reads the cursor of a listing of state ("": the first page).
func parseCursor(state backend.MessageState, s string) (cursor, error) {
	if s == "" {
		return cursor{state: state}, nil
	}
	parts := strings.SplitN(s, ":", 4)
	bad := fmt.Errorf("%w: %q is no cursor of a listing of %s messages", backend.ErrBadCursor, s, state)
	if len(parts) != 4 || parts[0] != string(state) || len(parts[1]) != 1 || !cursorMember.MatchString(parts[3]) {
		return cursor{}, bad
	}
	score, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return cursor{}, bad
	}
	return cursor{state: state, phase: parts[1], score: score, member: parts[3]}, nil
}

// scoreOf reads a cursor score the script returned (a ZSET score as a string, or a number).
func scoreOf(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case string:
		f, _ := strconv.ParseFloat(n, 64)
		return int64(f)
	}
	return 0
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
