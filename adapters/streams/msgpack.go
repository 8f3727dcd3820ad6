package streams

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// A minimal msgpack codec for what watermill-redisstream stores as an entry's metadata: a
// map of strings (message.Metadata, encoded by vmihailenco/msgpack). The encoder writes the
// smallest str and map formats, keys sorted; the decoder takes any str or bin format for keys
// and values (and nil as an empty value), and rejects everything else, never panicking.

// encodeMetadata encodes m as a msgpack map of str.
func encodeMetadata(m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	size := 5
	for k, v := range m {
		keys = append(keys, k)
		size += 10 + len(k) + len(v)
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	switch n := len(m); {
	case n < 16:
		b = append(b, 0x80|byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
	}
	for _, k := range keys {
		b = appendStr(b, k)
		b = appendStr(b, m[k])
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= 0xff:
		b = append(b, 0xd9, byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

var errShort = errors.New("msgpack: unexpected end of input")

// decodeMetadata decodes a msgpack map whose keys and values are strings.
func decodeMetadata(data []byte) (map[string]string, error) {
	d := mpDecoder{data: data}
	n, err := d.mapLen()
	if err != nil {
		return nil, err
	}
	// Every pair takes at least two bytes: a count beyond that is corrupt, not a reason to
	// allocate.
	if n > len(data)/2 {
		return nil, fmt.Errorf("msgpack: map of %d pairs in %d bytes", n, len(data))
	}
	m := make(map[string]string, n)
	for range n {
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		v, err := d.str()
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	if d.pos != len(data) {
		return nil, fmt.Errorf("msgpack: %d trailing bytes", len(data)-d.pos)
	}
	return m, nil
}

type mpDecoder struct {
	data []byte
	pos  int
}

func (d *mpDecoder) byte() (byte, error) {
	if d.pos >= len(d.data) {
		return 0, errShort
	}
	c := d.data[d.pos]
	d.pos++
	return c, nil
}

// uint reads a big-endian length of size bytes.
func (d *mpDecoder) uint(size int) (int, error) {
	if len(d.data)-d.pos < size {
		return 0, errShort
	}
	var n uint64
	for _, c := range d.data[d.pos : d.pos+size] {
		n = n<<8 | uint64(c)
	}
	d.pos += size
	if n > uint64(len(d.data)) {
		return 0, fmt.Errorf("msgpack: length %d exceeds the input", n)
	}
	return int(n), nil
}

func (d *mpDecoder) mapLen() (int, error) {
	c, err := d.byte()
	switch {
	case err != nil:
		return 0, err
	case c&0xf0 == 0x80:
		return int(c & 0x0f), nil
	case c == 0xde:
		return d.uint(2)
	case c == 0xdf:
		return d.uint(4)
	}
	return 0, fmt.Errorf("msgpack: want a map, found type byte 0x%02x", c)
}

func (d *mpDecoder) str() (string, error) {
	c, err := d.byte()
	if err != nil {
		return "", err
	}
	var n int
	switch {
	case c&0xe0 == 0xa0:
		n = int(c & 0x1f)
	case c == 0xd9 || c == 0xc4:
		n, err = d.uint(1)
	case c == 0xda || c == 0xc5:
		n, err = d.uint(2)
	case c == 0xdb || c == 0xc6:
		n, err = d.uint(4)
	case c == 0xc0:
		return "", nil
	default:
		return "", fmt.Errorf("msgpack: want a string, found type byte 0x%02x", c)
	}
	if err != nil {
		return "", err
	}
	if len(d.data)-d.pos < n {
		return "", errShort
	}
	s := string(d.data[d.pos : d.pos+n])
	d.pos += n
	return s, nil
}
