package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTableCutsItsLastColumnToTheWidth(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ab ", 40)
	var b bytes.Buffer
	tbl := newTable(&b, 30, "ID", "REASON")
	tbl.row("1", "short")
	tbl.row("22", long)
	require.NoError(t, tbl.flush())
	require.Equal(t, "ID  REASON\n1   short\n22  "+long[:25]+"…\n", b.String())

	b.Reset()
	tbl = newTable(&b, 0, "ID", "REASON") // no width: whole
	tbl.row("1", long)
	require.NoError(t, tbl.flush())
	require.Equal(t, "ID  REASON\n1   "+long+"\n", b.String())

	b.Reset() // the columns before take the width: the last keeps minLastColumn characters
	tbl = newTable(&b, 20, "NAME", "REASON")
	tbl.row(strings.Repeat("n", 30), long)
	require.NoError(t, tbl.flush())
	row := strings.Split(b.String(), "\n")[1]
	require.Equal(t, 32+minLastColumn, utf8.RuneCountInString(row))

	b.Reset() // an empty last cell pads the columns before it, as text/tabwriter did
	tbl = newTable(&b, 0, "BACKEND", "TOPIC", "GROUPS")
	tbl.row("list", "t", "")
	require.NoError(t, tbl.flush())
	require.Equal(t, "BACKEND  TOPIC  GROUPS\nlist     t      \n", b.String())
}

func TestAnOutputWithoutAWidthTakes100(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, widthOf(Env{Width: func(io.Writer) int { return 0 }}, io.Discard))
	require.Equal(t, 57, widthOf(Env{Width: func(io.Writer) int { return 57 }}, io.Discard))
	require.Equal(t, 0, terminalWidth(&bytes.Buffer{}))
}

func TestBytesCell(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, "(empty)"},
		{[]byte(`{ "a" : [1, 2] }`), `{"a":[1,2]}`},
		{[]byte(`"\u001b \\ \""`), `"\u001b \\ \""`}, // JSON's escapes kept as they are
		{[]byte("line one\nline\ttwo"), `line one\nline\ttwo`},
		{[]byte("\x1b[31mred"), "hex 1b5b33316d726564"},
		{[]byte{0, 1, 0xff}, "hex 0001ff"},
		{[]byte("{\"a\":\"\u009b\"}"), `{"a":"\u009b"}`}, // a C1 control in a JSON string
	} {
		require.Equal(t, tc.want, bytesCell(tc.in), string(tc.in))
	}
	big := []byte(strings.Repeat("é", cellBytes)) // 2 bytes each: cut at a character
	c := bytesCell(big)
	require.True(t, utf8.ValidString(c))
	require.Equal(t, cellBytes/2+1, utf8.RuneCountInString(c))
	require.True(t, strings.HasSuffix(c, "é…"))
	require.True(t, strings.HasSuffix(bytesCell(bytes.Repeat([]byte{0}, cellBytes)), "00…"))
}

func TestWriteBytesPrintsJSONIndentedTextAsItIsElseHex(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	writeBytes(&b, "  ", []byte(`{"a":{"b":"\u00e9\u009b"}}`))
	require.Equal(t, "  {\n    \"a\": {\n      \"b\": \"\\u00e9\\u009b\"\n    }\n  }\n", b.String())
	b.Reset()
	writeBytes(&b, "  ", []byte("[\"\U0001D11E \U000E0001\"]")) // printable, then a tag character
	require.Equal(t, "  [\n    \"\U0001D11E \\udb40\\udc01\"\n  ]\n", b.String())
	require.Equal(t, "JSON", bytesKind([]byte(`[1]`)))

	b.Reset()
	writeBytes(&b, "  ", []byte("{\"c1\":\"\u009b[31m\"}")) // valid JSON, but a raw C1 control
	require.Equal(t, "  {\n    \"c1\": \"\\u009b[31m\"\n  }\n", b.String())

	b.Reset()
	writeBytes(&b, "  ", []byte("one\r\ntwo\n"))
	require.Equal(t, "  one\n  two\n", b.String())
	require.Equal(t, "text", bytesKind([]byte("one")))

	b.Reset()
	writeBytes(&b, "  ", []byte{0, 'h'})
	require.Equal(t, "  00000000  00 68                                             |.h|\n", b.String())
	require.Equal(t, "binary, hex dump", bytesKind([]byte{0}))
	require.Equal(t, "empty", bytesKind(nil))
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1764511200000-17", shellQuote("1764511200000-17"))
	require.Equal(t, "a:b/c=d", shellQuote("a:b/c=d"))
	require.Equal(t, "''", shellQuote(""))
	require.Equal(t, `'a b'`, shellQuote("a b"))
	require.Equal(t, `'it'\''s'`, shellQuote("it's"))
	require.Equal(t, `'a\x1bb'`, shellQuote("a\x1bb"))
}
