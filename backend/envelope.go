package backend

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/google/uuid"
)

// Envelope is what relq stores for one message: the Watermill UUID, metadata and payload.
type Envelope struct {
	UUID     string
	Metadata map[string]string
	Payload  []byte
}

// MetadataKey is the metadata key of a message's partition key (pubsub.SetKey): a partitioned
// topic sends the messages of one key to one partition. It is stored like any metadata.
const MetadataKey = "_relq_key"

// The first byte of every encoded envelope is its version. A decoder that meets another
// version reports ErrCorruptEntry rather than guessing.
const (
	// envelopeV1 stores the UUID as a length-prefixed string.
	envelopeV1 byte = 1
	// envelopeV2 stores a canonical UUID (36 lowercase characters, as watermill.NewUUID makes)
	// as its 16 bytes, 21 bytes less per message; any other UUID string goes as version 1.
	envelopeV2 byte = 2
)

// maxFieldLen bounds one length-prefixed field, so a corrupt length cannot ask for a huge
// allocation before the bounds check fails.
const maxFieldLen = 1 << 30

// metadataPresize caps the room reserved for metadata before its entries are read: enough for
// any usual message, and under a kilobyte whatever count corrupt data claims.
const metadataPresize = 16

// EncodeEnvelope encodes e in relq's binary format:
//
//	0x01 | uvarint len(UUID) | UUID | rest     (any UUID string)
//	0x02 | 16 bytes of the UUID | rest        (a canonical lowercase UUID)
//	rest: uvarint count | (uvarint len(k) | k | uvarint len(v) | v)* | uvarint len(payload) | payload
//
// Metadata keys are written in sorted order so equal envelopes encode to equal bytes.
func EncodeEnvelope(e Envelope) []byte {
	size := 1 + binary.MaxVarintLen64*(3+2*len(e.Metadata)) + len(e.UUID) + len(e.Payload)
	keys := make([]string, 0, len(e.Metadata))
	for k, v := range e.Metadata {
		keys = append(keys, k)
		size += len(k) + len(v)
	}
	sort.Strings(keys)
	b := make([]byte, 0, size)
	if u, ok := canonicalUUID(e.UUID); ok {
		b = append(b, envelopeV2)
		b = append(b, u[:]...)
	} else {
		b = append(b, envelopeV1)
		b = appendBytes(b, []byte(e.UUID))
	}
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendBytes(b, []byte(k))
		b = appendBytes(b, []byte(e.Metadata[k]))
	}
	return appendBytes(b, e.Payload)
}

// canonicalUUID parses s when it is a UUID in canonical form (8-4-4-4-12 lowercase hex), the
// only form whose 16 bytes give back exactly s.
func canonicalUUID(s string) (uuid.UUID, bool) {
	if len(s) != 36 {
		return uuid.UUID{}, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'F' {
			return uuid.UUID{}, false
		}
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}

func appendBytes(b, field []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(field)))
	return append(b, field...)
}

// DecodeEnvelope decodes bytes written by EncodeEnvelope. Any input yields an envelope or an
// error wrapping ErrCorruptEntry; it never panics.
func DecodeEnvelope(data []byte) (Envelope, error) {
	d := decoder{data: data}
	if len(data) == 0 {
		return Envelope{}, fmt.Errorf("%w: empty envelope", ErrCorruptEntry)
	}
	d.pos = 1
	var e Envelope
	switch v := data[0]; v {
	case envelopeV1:
		e.UUID = d.str("uuid")
	case envelopeV2:
		if len(data) < 1+16 {
			return Envelope{}, fmt.Errorf("%w: envelope too short for its UUID", ErrCorruptEntry)
		}
		e.UUID = uuid.UUID(data[1:17]).String()
		d.pos = 17
	default:
		return Envelope{}, fmt.Errorf("%w: unknown envelope version %d", ErrCorruptEntry, v)
	}
	n := d.uvarint("metadata count")
	// Each entry takes at least its two length bytes, and the payload's length one more.
	if d.err == nil && n > uint64(len(data)-d.pos)/2 {
		d.fail("metadata count %d exceeds what the remaining %d bytes can hold", n, len(data)-d.pos)
	}
	if d.err == nil && n > 0 {
		// The map grows with the entries actually read; the count only hints, so corrupt
		// data cannot reserve room for entries it does not hold.
		e.Metadata = make(map[string]string, min(n, metadataPresize))
		for i := uint64(0); i < n && d.err == nil; i++ {
			k := d.str("metadata key")
			v := d.str("metadata value")
			e.Metadata[k] = v
		}
	}
	e.Payload = d.field("payload")
	if d.err == nil && d.pos != len(data) {
		d.fail("%d trailing bytes", len(data)-d.pos)
	}
	if d.err != nil {
		return Envelope{}, d.err
	}
	return e, nil
}

type decoder struct {
	data []byte
	pos  int
	err  error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorruptEntry}, args...)...)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.data[d.pos:])
	if n <= 0 {
		d.fail("bad length of %s at byte %d", what, d.pos)
		return 0
	}
	d.pos += n
	return v
}

// field returns a copy of the next length-prefixed field.
func (d *decoder) field(what string) []byte {
	b := d.next(what)
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// str returns the next length-prefixed field as a string (one copy).
func (d *decoder) str(what string) string { return string(d.next(what)) }

// next returns the next length-prefixed field in place, or nil on error.
func (d *decoder) next(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > maxFieldLen || n > uint64(len(d.data)-d.pos) {
		d.fail("%s length %d runs past the end at byte %d", what, n, d.pos)
		return nil
	}
	b := d.data[d.pos : d.pos+int(n) : d.pos+int(n)]
	d.pos += int(n)
	return b
}
