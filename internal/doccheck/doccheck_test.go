package doccheck_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// root is the repository root, seen from this package's directory (where go test runs).
var root = filepath.Join("..", "..")

// watermillRows are the tests.Features fields that describe a Pub/Sub's semantics, each of
// which docs/characteristics.md gives a row per backend. The others configure the suite
// (RestartServiceCommand, GenerateTopicFunc, ForceShort, ...), or describe what relq is not
// (RequireSingleInstance), and have no row.
var watermillRows = []string{
	"ConsumerGroups",
	"ExactlyOnceDelivery",
	"GuaranteedOrder",
	"GuaranteedOrderWithSingleSubscriber",
	"Persistent",
	"NewSubscriberReceivesOldMessages",
}

// replicaWaiterRow is the row saying whether a backend implements backend.ReplicaWaiter.
const replicaWaiterRow = "ReplicaWaiter"

// flag is one yes/no a backend declares in code, and where, for the failure message.
type flag struct {
	value  bool
	source string
}

// declared maps backend name -> row name -> flag.
type declared map[string]map[string]flag

// newBackends returns the three backends. New makes no round trip (it checks the Redis version
// on first use), so the client points at an address nothing listens on and is never dialled.
func newBackends(t *testing.T) []backend.Backend {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	l, err := list.New(client, list.Options{})
	require.NoError(t, err)
	z, err := zset.New(client, zset.Options{})
	require.NoError(t, err)
	s, err := streams.New(client, streams.Options{})
	require.NoError(t, err)
	return []backend.Backend{l, z, s}
}

// capabilities returns a backend's Capabilities as flags, one per field.
func capabilities(t *testing.T, b backend.Backend) map[string]flag {
	t.Helper()
	v := reflect.ValueOf(b.Capabilities())
	out := map[string]flag{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		require.Equal(t, reflect.Bool, f.Type.Kind(),
			"backend.Capabilities.%s is a %s: doccheck compares only yes/no fields; teach it the new kind", f.Name, f.Type)
		out[f.Name] = flag{value: v.Field(i).Bool(), source: fmt.Sprintf("%s's Capabilities().%s", b.Name(), f.Name)}
	}
	return out
}

// capabilityNames lists the fields of backend.Capabilities.
func capabilityNames() []string {
	typ := reflect.TypeFor[backend.Capabilities]()
	names := make([]string, typ.NumField())
	for i := range names {
		names[i] = typ.Field(i).Name
	}
	return names
}

// watermillFeatures reads the tests.Features literal an adapter passes to Watermill's suite,
// from its *_test.go files in adapters/<backend>. A field the literal leaves out is false.
func watermillFeatures(t *testing.T, backend string) map[string]flag {
	t.Helper()
	for _, name := range watermillRows {
		f, ok := reflect.TypeFor[tests.Features]().FieldByName(name)
		require.True(t, ok && f.Type.Kind() == reflect.Bool, "Watermill's tests.Features has no yes/no field %s any more", name)
	}
	dir := filepath.Join(root, "adapters", backend)
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	require.NoError(t, err)
	var found map[string]flag
	var where string
	for _, path := range files {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		pkg := importName(file, "github.com/ThreeDotsLabs/watermill/pubsub/tests")
		if pkg == "" {
			continue
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !isSelector(lit.Type, pkg, "Features") {
				return true
			}
			at := filepath.ToSlash(filepath.Join("adapters", backend, filepath.Base(path))) + ":" + strconv.Itoa(fset.Position(lit.Pos()).Line)
			got := map[string]flag{}
			for _, name := range watermillRows {
				got[name] = flag{value: false, source: fmt.Sprintf("tests.Features.%s (left out, so false) at %s", name, at)}
			}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				require.True(t, ok, "%s: tests.Features literal without field names", at)
				key := kv.Key.(*ast.Ident).Name
				if !slices.Contains(watermillRows, key) {
					continue
				}
				v, ok := kv.Value.(*ast.Ident)
				require.True(t, ok && (v.Name == "true" || v.Name == "false"),
					"%s: tests.Features.%s is not a literal true or false, which doccheck cannot read", at, key)
				got[key] = flag{value: v.Name == "true", source: fmt.Sprintf("tests.Features.%s at %s", key, at)}
			}
			if found != nil {
				for name, f := range got {
					require.Equal(t, found[name].value, f.value, "%s and %s declare different tests.Features.%s", where, at, name)
				}
			}
			found, where = got, at
			return false
		})
	}
	require.NotNil(t, found, "no tests.Features literal in %s/*_test.go: where does the %s backend declare its Watermill features now?", dir, backend)
	return found
}

// importName returns the name under which file imports path, or "" when it does not.
func importName(file *ast.File, path string) string {
	for _, imp := range file.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return p[strings.LastIndex(p, "/")+1:]
		}
	}
	return ""
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg
}

// declaredFlags gathers every backend's flags: Capabilities, Watermill features, ReplicaWaiter.
func declaredFlags(t *testing.T) declared {
	t.Helper()
	out := declared{}
	for _, b := range newBackends(t) {
		flags := capabilities(t, b)
		maps.Copy(flags, watermillFeatures(t, b.Name()))
		_, ok := b.(backend.ReplicaWaiter)
		flags[replicaWaiterRow] = flag{value: ok, source: fmt.Sprintf("whether %s's Backend implements backend.ReplicaWaiter", b.Name())}
		out[b.Name()] = flags
	}
	return out
}

// TestCharacteristics compares every backticked row of docs/characteristics.md's per-backend
// tables with the code, and requires a row for every flag.
func TestCharacteristics(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "characteristics.md")
	problems := checkCharacteristics(doc, declaredFlags(t))
	require.Empty(t, problems, "docs/characteristics.md is out of step with the code:\n%s", strings.Join(problems, "\n"))
}

// TestCapabilityTables compares the capability rows of the side-by-side tables in
// docs/concepts.md and docs/choosing-a-backend.md with each backend's Capabilities.
func TestCapabilityTables(t *testing.T) {
	t.Parallel()
	flags := declaredFlags(t)
	for _, name := range []string{"concepts.md", "choosing-a-backend.md"} {
		problems := checkMatrix(readDoc(t, name), flags, capabilityNames())
		require.Empty(t, problems, "docs/%s is out of step with the backends' Capabilities:\n%s", name, strings.Join(problems, "\n"))
	}
}

// TestCheckerCatchesDrift proves the checks can fail: each edit of the real page, or of what
// the code declares, must be reported.
func TestCheckerCatchesDrift(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "characteristics.md")
	flags := declaredFlags(t)
	require.Empty(t, checkCharacteristics(doc, flags), "the page must pass before it is edited")

	cases := []struct {
		name  string
		doc   string
		flags declared
		want  string
	}{
		{name: "flipped cell", doc: flipRow(t, doc, flags, "zset", "Priorities"), flags: flags, want: "zset: `Priorities` says"},
		{name: "flipped Watermill cell", doc: flipRow(t, doc, flags, "streams", "NewSubscriberReceivesOldMessages"), flags: flags, want: "streams: `NewSubscriberReceivesOldMessages` says"},
		{name: "flipped ReplicaWaiter cell", doc: flipRow(t, doc, flags, "list", replicaWaiterRow), flags: flags, want: "list: `ReplicaWaiter` says"},
		{name: "missing row", doc: editRow(t, doc, "list", "PendingOrphans", ""), flags: flags, want: "no row for `PendingOrphans`"},
		{name: "unknown row", doc: editRow(t, doc, "list", "FIFO", "| `FIFO` | yes | |\n| `FIFOO` | yes | |"), flags: flags, want: "`FIFOO` names no flag"},
		{name: "not yes or no", doc: editRow(t, doc, "streams", "FIFO", "| `FIFO` | mostly | |"), flags: flags, want: "neither yes nor no"},
		{name: "new capability", doc: doc, flags: withFlag(flags, "NewFlag"), want: "no row for `NewFlag`"},
	}
	for _, tc := range cases {
		problems := checkCharacteristics(tc.doc, tc.flags)
		require.NotEmpty(t, problems, tc.name)
		require.Contains(t, strings.Join(problems, "\n"), tc.want, tc.name)
	}

	// A side-by-side table as concepts.md prints one, written from the flags themselves.
	matrix := matrixDoc(flags, capabilityNames())
	require.Empty(t, checkMatrix(matrix, flags, capabilityNames()), "the generated table must pass:\n%s", matrix)
	for _, name := range capabilityNames() {
		wrong := withFlag(flags, name) // every backend says yes: a lie for those without it
		for _, b := range slices.Sorted(maps.Keys(flags)) {
			if !flags[b][name].value {
				require.Contains(t, strings.Join(checkMatrix(matrixDoc(wrong, capabilityNames()), flags, capabilityNames()), "\n"),
					b+": `"+name+"` says yes", "a flipped cell")
			}
		}
	}
	require.Contains(t, strings.Join(checkMatrix(matrix, withFlag(flags, "NewFlag"), append(capabilityNames(), "NewFlag")), "\n"),
		"no row for `NewFlag`", "a new field without a row")
}

// matrixDoc writes a table with a column per backend and a row per flag in names.
func matrixDoc(flags declared, names []string) string {
	var b strings.Builder
	b.WriteString("| capability | list | zset | streams |\n|---|---|---|---|\n")
	for _, name := range names {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name,
			yesNo(flags["list"][name].value), yesNo(flags["zset"][name].value), yesNo(flags["streams"][name].value))
	}
	return b.String()
}

// flipRow writes the opposite of what backend declares for name in its row of doc.
func flipRow(t *testing.T, doc string, flags declared, backend, name string) string {
	t.Helper()
	return editRow(t, doc, backend, name, fmt.Sprintf("| `%s` | %s | |", name, yesNo(!flags[backend][name].value)))
}

// editRow replaces the row of name in backend's table of doc with repl ("" deletes it).
func editRow(t *testing.T, doc, backend, name, repl string) string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	section := ""
	for i, line := range lines {
		if h, ok := heading(line); ok {
			section = h
		}
		if section == backend && strings.HasPrefix(line, "| `"+name+"` |") {
			if repl == "" {
				return strings.Join(slices.Delete(lines, i, i+1), "\n")
			}
			lines[i] = repl
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no row `%s` under the %s heading", name, backend)
	return ""
}

// withFlag returns a copy of flags in which every backend declares one more flag.
func withFlag(flags declared, name string) declared {
	out := declared{}
	for b, f := range flags {
		out[b] = maps.Clone(f)
		out[b][name] = flag{value: true, source: "a field added for the test"}
	}
	return out
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", name))
	require.NoError(t, err)
	return string(raw)
}

// checkCharacteristics checks doc's per-backend tables: under a heading whose first word is a
// backend's name, a table with Feature and Implements columns. It returns the problems found.
func checkCharacteristics(doc string, flags declared) []string {
	var problems []string
	seen := map[string]bool{}
	for _, tb := range parseTables(doc) {
		feature, implements := column(tb.header, "feature"), column(tb.header, "implements")
		if feature < 0 || implements < 0 {
			continue
		}
		want, ok := flags[tb.section]
		if !ok {
			problems = append(problems, fmt.Sprintf("line %d: a Feature/Implements table under %q, which names no backend", tb.line, tb.section))
			continue
		}
		if seen[tb.section] {
			problems = append(problems, fmt.Sprintf("line %d: a second table for %s", tb.line, tb.section))
		}
		seen[tb.section] = true
		rows := map[string]bool{}
		for _, r := range tb.rows {
			name, ok := rowName(r.cells[feature])
			if !ok {
				continue // a row in plain words: the shared contract, not a flag
			}
			f, known := want[name]
			switch {
			case !known:
				problems = append(problems, fmt.Sprintf("line %d: %s: `%s` names no flag of the %s backend (a typo, or a flag the code dropped)", r.line, tb.section, name, tb.section))
				continue
			case rows[name]:
				problems = append(problems, fmt.Sprintf("line %d: %s: a second row for `%s`", r.line, tb.section, name))
			}
			rows[name] = true
			problems = append(problems, compare(r, tb.section, name, r.cells[implements], f)...)
		}
		for _, name := range slices.Sorted(maps.Keys(want)) {
			if !rows[name] {
				problems = append(problems, fmt.Sprintf("line %d: %s: no row for `%s` (%s is %s)", tb.line, tb.section, name, want[name].source, yesNo(want[name].value)))
			}
		}
	}
	for _, b := range slices.Sorted(maps.Keys(flags)) {
		if !seen[b] {
			problems = append(problems, fmt.Sprintf("no Feature/Implements table under a %q heading", b))
		}
	}
	return problems
}

// checkMatrix checks doc's side-by-side tables, those with a column per backend: each of the
// required rows must be in one of them, and every cell of a row naming a flag must agree.
func checkMatrix(doc string, flags declared, required []string) []string {
	var problems []string
	rows := map[string]bool{}
	backends := slices.Sorted(maps.Keys(flags))
	for _, tb := range parseTables(doc) {
		cols := map[string]int{}
		for _, b := range backends {
			if i := column(tb.header, b); i >= 0 {
				cols[b] = i
			}
		}
		if len(cols) != len(backends) {
			continue
		}
		for _, r := range tb.rows {
			name, ok := rowName(r.cells[0])
			if !ok || !slices.Contains(required, name) {
				continue
			}
			rows[name] = true
			for _, b := range backends {
				problems = append(problems, compare(r, b, name, r.cells[cols[b]], flags[b][name])...)
			}
		}
	}
	for _, name := range required {
		if !rows[name] {
			problems = append(problems, fmt.Sprintf("no row for `%s` in a table with a column per backend", name))
		}
	}
	return problems
}

// column returns the index of the header cell named name, whatever its case, or -1.
func column(header []string, name string) int {
	return slices.IndexFunc(header, func(h string) bool { return strings.EqualFold(h, name) })
}

// compare checks one cell against the flag the code declares.
func compare(r row, backend, name, cell string, f flag) []string {
	got, ok := yes(cell)
	switch {
	case !ok:
		return []string{fmt.Sprintf("line %d: %s: `%s`: %q is neither yes nor no", r.line, backend, name, cell)}
	case got != f.value:
		return []string{fmt.Sprintf("line %d: %s: `%s` says %s, but %s is %s", r.line, backend, name, yesNo(got), f.source, yesNo(f.value))}
	}
	return nil
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// yes reads a cell that starts with yes or no ("no (ignored)", "**yes**", "yes, with ...").
func yes(cell string) (value, ok bool) {
	c := strings.ToLower(strings.TrimLeft(strings.TrimSpace(cell), "*_"))
	for word, v := range map[string]bool{"yes": true, "no": false} {
		if rest, found := strings.CutPrefix(c, word); found && (rest == "" || !isLetter(rest[0])) {
			return v, true
		}
	}
	return false, false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// rowPattern matches a first cell that starts with a backticked Go identifier: a flag's row.
var rowPattern = regexp.MustCompile("^`([A-Za-z][A-Za-z0-9]*)`")

func rowName(cell string) (string, bool) {
	m := rowPattern.FindStringSubmatch(strings.TrimSpace(cell))
	if m == nil {
		return "", false
	}
	return m[1], true
}

// table is one Markdown table: its header cells, its rows, the first word of the nearest
// heading above it, and its line (1-based, for messages).
type table struct {
	section string
	header  []string
	rows    []row
	line    int
}

type row struct {
	cells []string
	line  int
}

// parseTables finds the pipe tables of doc: a header line, a separator line of dashes, then
// rows, each line starting with '|'. Lines inside fenced code blocks are skipped.
func parseTables(doc string) []table {
	var out []table
	lines := strings.Split(doc, "\n")
	section, fenced := "", false
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if h, ok := heading(line); ok {
			section = h
			continue
		}
		if !strings.HasPrefix(line, "|") || i+1 >= len(lines) || !isSeparator(lines[i+1]) {
			continue
		}
		tb := table{section: section, header: cells(line), line: i + 1}
		i += 2
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			c := cells(strings.TrimSpace(lines[i]))
			for len(c) < len(tb.header) {
				c = append(c, "")
			}
			tb.rows = append(tb.rows, row{cells: c, line: i + 1})
		}
		i--
		out = append(out, tb)
	}
	return out
}

// heading returns the first word of a Markdown heading line ("## list (`adapters/list`)" is
// "list").
func heading(line string) (string, bool) {
	if !strings.HasPrefix(line, "#") {
		return "", false
	}
	fields := strings.Fields(strings.TrimLeft(line, "#"))
	if len(fields) == 0 {
		return "", true
	}
	return fields[0], true
}

func isSeparator(line string) bool {
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, "|") && strings.Trim(line, "|-: ") == ""
}

// cells splits a table line on the pipes that are not escaped (`\|` stays in its cell).
func cells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var out []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}
