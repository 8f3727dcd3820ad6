package streams

import (
	"fmt"

	"github.com/relq/relq/backend"
)

// Entry field names.
const (
	// FieldEnvelope holds relq's binary envelope in FormatNative.
	FieldEnvelope = "e"
	// FieldWatermillUUID, FieldMetadata and FieldPayload are watermill-redisstream's
	// (DefaultMarshallerUnmarshaller): the message UUID, its metadata as a msgpack map, and the
	// payload.
	FieldWatermillUUID = "_watermill_message_uuid"
	FieldMetadata      = "metadata"
	FieldPayload       = "payload"
)

// codec writes entries in one Format and reads both: an entry is decoded by the fields it
// has, so a backend meets no surprise whichever program wrote the stream.
type codec struct {
	format Format
}

// names are the field names of an entry written in c's format.
func (c codec) names() []string {
	if c.format == FormatWatermill {
		return []string{FieldWatermillUUID, FieldMetadata, FieldPayload}
	}
	return []string{FieldEnvelope}
}

// values are the field values of e, in the order of names. Empty metadata is written as an
// empty string, as watermill-redisstream does.
func (c codec) values(e backend.Envelope) []any {
	if c.format == FormatWatermill {
		var md []byte
		if len(e.Metadata) > 0 {
			md = encodeMetadata(e.Metadata)
		}
		return []any{e.UUID, md, e.Payload}
	}
	return []any{backend.EncodeEnvelope(e)}
}

// decodeEntry turns an entry's flat field/value list into an envelope: relq's envelope when
// it has FieldEnvelope, else watermill-redisstream's layout, which needs the UUID field. Any
// other content is an error wrapping backend.ErrCorruptEntry.
func decodeEntry(flat []string) (backend.Envelope, error) {
	f := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		f[flat[i]] = flat[i+1]
	}
	if e, ok := f[FieldEnvelope]; ok {
		return backend.DecodeEnvelope([]byte(e))
	}
	uuid, ok := f[FieldWatermillUUID]
	if !ok {
		return backend.Envelope{}, fmt.Errorf("%w: entry has neither %q nor %q", backend.ErrCorruptEntry, FieldEnvelope, FieldWatermillUUID)
	}
	env := backend.Envelope{UUID: uuid, Payload: []byte(f[FieldPayload])}
	if md := f[FieldMetadata]; md != "" {
		m, err := decodeMetadata([]byte(md))
		if err != nil {
			return backend.Envelope{}, fmt.Errorf("%w: field %q: %v", backend.ErrCorruptEntry, FieldMetadata, err)
		}
		if len(m) > 0 {
			env.Metadata = m
		}
	}
	return env, nil
}

// rawOf is what a dead letter keeps as DeadLetter.Raw when its entry does not decode: the
// field holding the message (FieldEnvelope, else FieldMetadata), or, when it has neither,
// all its fields as a msgpack map.
func rawOf(flat []string) []byte {
	f := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		f[flat[i]] = flat[i+1]
	}
	for _, name := range []string{FieldEnvelope, FieldMetadata} {
		if v, ok := f[name]; ok {
			return []byte(v)
		}
	}
	if len(f) == 0 {
		return nil
	}
	return encodeMetadata(f)
}
