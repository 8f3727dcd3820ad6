package streams

import (
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// metadataCases cover every str and map size class of msgpack.
func metadataCases() []map[string]string {
	many := map[string]string{}
	for i := range 40 {
		many["key-"+strings.Repeat("k", i)] = strings.Repeat("v", i)
	}
	return []map[string]string{
		{"a": "1"},
		{"empty": "", "unicode": "zażółć ✓", "binary": "\x00\xff\xc1"},
		{"str8": strings.Repeat("x", 200), strings.Repeat("k", 31): strings.Repeat("y", 32)},
		{"str16": strings.Repeat("x", 70_000)},
		many,
	}
}

// The metadata codec reads what watermill-redisstream v1.4.5 writes (vmihailenco/msgpack), and
// writes what it reads.
func TestMetadataCodecMatchesWatermillRedisstream(t *testing.T) {
	t.Parallel()
	wm := redisstream.DefaultMarshallerUnmarshaller{}
	for _, md := range metadataCases() {
		msg := message.NewMessage("uuid-1", []byte("payload"))
		for k, v := range md {
			msg.Metadata.Set(k, v)
		}
		values, err := wm.Marshal("topic", msg)
		require.NoError(t, err)
		got, err := decodeMetadata(values[FieldMetadata].([]byte))
		require.NoError(t, err)
		require.Equal(t, md, got)

		// As read back from Redis, every value is a string.
		flat := []string{}
		for _, v := range (codec{format: FormatWatermill}).values(backend.Envelope{UUID: "uuid-1", Metadata: md, Payload: []byte("payload")}) {
			switch v := v.(type) {
			case string:
				flat = append(flat, v)
			case []byte:
				flat = append(flat, string(v))
			}
		}
		back, err := wm.Unmarshal(map[string]any{FieldWatermillUUID: flat[0], FieldMetadata: flat[1], FieldPayload: flat[2]})
		require.NoError(t, err)
		require.Equal(t, "uuid-1", back.UUID)
		require.Equal(t, "payload", string(back.Payload))
		require.Equal(t, md, map[string]string(back.Metadata))
	}
}

func TestDecodeEntry(t *testing.T) {
	t.Parallel()
	env := backend.Envelope{UUID: "u", Metadata: map[string]string{"a": "b"}, Payload: []byte("p")}
	for name, c := range map[string]struct {
		flat    []string
		want    backend.Envelope
		corrupt bool
		raw     string
	}{
		"native":             {flat: []string{FieldEnvelope, string(backend.EncodeEnvelope(env))}, want: env},
		"watermill":          {flat: []string{FieldWatermillUUID, "u", FieldMetadata, string(encodeMetadata(env.Metadata)), FieldPayload, "p"}, want: env},
		"watermill no extra": {flat: []string{FieldWatermillUUID, "u"}, want: backend.Envelope{UUID: "u", Payload: []byte{}}},
		"bad envelope":       {flat: []string{FieldEnvelope, "\x09x"}, corrupt: true, raw: "\x09x"},
		"bad metadata":       {flat: []string{FieldWatermillUUID, "u", FieldMetadata, "\x07"}, corrupt: true, raw: "\x07"},
		"no uuid":            {flat: []string{FieldMetadata, "\x80", FieldPayload, "p"}, corrupt: true, raw: "\x80"},
		"foreign":            {flat: []string{"x", "y"}, corrupt: true, raw: string(encodeMetadata(map[string]string{"x": "y"}))},
	} {
		got, err := decodeEntry(c.flat)
		if c.corrupt {
			require.ErrorIs(t, err, backend.ErrCorruptEntry, name)
			require.Equal(t, c.raw, string(rawOf(c.flat)), name)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, c.want, got, name)
	}
}

func TestDecodeMetadataRejectsWhatIsNotAMapOfStrings(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"", "\x07", "\x81", "\x81\xa1a", "\x81\x01\xa1a", "\xde\xff\xff", "\xdf\xff\xff\xff\xff", "\x81\xa1a\xa1b\x00", "\x81\xdb\xff\xff\xff\xff"} {
		_, err := decodeMetadata([]byte(b))
		require.Error(t, err, "%q", b)
	}
	m, err := decodeMetadata([]byte("\x82\xc4\x01a\xc0\xa1b\xc5\x00\x01c"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "", "b": "c"}, m, "bin and nil are taken too")
}

// Any bytes decode to a map or an error, never a panic, and what decodes re-encodes to a map
// that decodes the same.
func FuzzDecodeMetadata(f *testing.F) {
	for _, md := range metadataCases()[:3] {
		f.Add(encodeMetadata(md))
	}
	f.Add([]byte("\xde\x00\x01\xd9\x01a\xc0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMetadata(data)
		if err != nil {
			return
		}
		again, err := decodeMetadata(encodeMetadata(m))
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}
