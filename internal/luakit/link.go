package luakit

import (
	"regexp"
	"strings"
)

// chunkStart matches a top-level local definition: "local function name(" or "local a, b =".
var chunkStart = regexp.MustCompile(`^local (?:function ([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_, ]*?)\s*=)`)

var identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// chunk is one top-level piece of a library file: a local definition (with the comment lines
// above it) or any other statement, which is always kept.
type chunk struct {
	names []string // the locals it defines; none: always kept
	text  string
}

// Link returns verb preceded by only those top-level definitions of libs (in order) that the
// verb needs, directly or through other definitions it keeps. Redis runs a script's whole body
// on every call, so every local function a script defines is a closure made on every call:
// a verb that carries the helpers of every other verb pays for them each time. Comment-only
// lines between definitions are dropped; a statement that is not a local definition (such as
// common.lua's replicate_commands call) is always kept.
func Link(verb string, libs ...string) string {
	var chunks []chunk
	for _, lib := range libs {
		chunks = append(chunks, split(lib)...)
	}
	need := map[string]bool{}
	mark := func(text string) {
		for line := range strings.Lines(text) {
			code, _, _ := strings.Cut(line, "--") // comments name no dependency
			for _, id := range identifier.FindAllString(code, -1) {
				need[id] = true
			}
		}
	}
	mark(verb)
	keep := make([]bool, len(chunks))
	for changed := true; changed; {
		changed = false
		for i := len(chunks) - 1; i >= 0; i-- {
			c := chunks[i]
			if keep[i] {
				continue
			}
			if len(c.names) == 0 {
				keep[i], changed = true, true
				mark(c.text)
				continue
			}
			for _, n := range c.names {
				if need[n] {
					keep[i], changed = true, true
					mark(c.text)
					break
				}
			}
		}
	}
	var b strings.Builder
	for i, c := range chunks {
		if keep[i] {
			b.WriteString(c.text)
		}
	}
	b.WriteString(verb)
	return b.String()
}

// split cuts a library file into chunks at each top-level local definition. Leading comments
// stay with the definition that follows them.
func split(src string) []chunk {
	var out []chunk
	var cur chunk
	var comments strings.Builder
	started := false
	flush := func() {
		if started {
			out = append(out, cur)
		}
	}
	for line := range strings.Lines(src) {
		trimmed := strings.TrimSpace(line)
		if m := chunkStart.FindStringSubmatch(line); m != nil {
			flush()
			names := []string{m[1]}
			if m[1] == "" {
				names = strings.FieldsFunc(m[2], func(r rune) bool { return r == ',' || r == ' ' })
			}
			cur = chunk{names: names, text: comments.String() + line}
			comments.Reset()
			started = true
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "--") && !strings.HasPrefix(line, " "):
			comments.WriteString(line)
		case trimmed == "" && !started:
		case !started || (cur.names != nil && line[0] != ' ' && line[0] != '\t' && trimmed != "" && !strings.HasPrefix(trimmed, "end")):
			// A top-level statement that is not a definition.
			flush()
			cur = chunk{text: comments.String() + line}
			comments.Reset()
			started = true
		default:
			cur.text += comments.String() + line
			comments.Reset()
		}
	}
	flush()
	return out
}
