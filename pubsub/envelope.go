package pubsub

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Envelope is what relq stores for one message: the Watermill UUID, metadata and payload.
type Envelope struct {
	UUID     string
	Metadata map[string]string
	Payload  []byte
}

// envelopeVersion is the first byte of every encoded envelope. A decoder that meets another
// version reports ErrCorruptEntry rather than guessing.
const envelopeVersion byte = 1

// maxFieldLen bounds one length-prefixed field, so a corrupt length cannot ask for a huge
// allocation before the bounds check fails.
const maxFieldLen = 1 << 30

// EncodeEnvelope encodes e in relq's binary format, version 1:
//
//	0x01 | uvarint len(UUID) | UUID | uvarint count | (uvarint len(k) | k | uvarint len(v) | v)* |
//	uvarint len(payload) | payload
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
	b = append(b, envelopeVersion)
	b = appendBytes(b, []byte(e.UUID))
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendBytes(b, []byte(k))
		b = appendBytes(b, []byte(e.Metadata[k]))
	}
	return appendBytes(b, e.Payload)
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
	if v := data[0]; v != envelopeVersion {
		return Envelope{}, fmt.Errorf("%w: unknown envelope version %d", ErrCorruptEntry, v)
	}
	d.pos = 1
	var e Envelope
	e.UUID = string(d.field("uuid"))
	n := d.uvarint("metadata count")
	if d.err == nil && n > uint64(len(data)) {
		d.fail("metadata count %d exceeds input size", n)
	}
	if d.err == nil && n > 0 {
		e.Metadata = make(map[string]string, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			k := string(d.field("metadata key"))
			v := string(d.field("metadata value"))
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

func (d *decoder) field(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > maxFieldLen || n > uint64(len(d.data)-d.pos) {
		d.fail("%s length %d runs past the end at byte %d", what, n, d.pos)
		return nil
	}
	out := make([]byte, n)
	copy(out, d.data[d.pos:d.pos+int(n)])
	d.pos += int(n)
	return out
}
