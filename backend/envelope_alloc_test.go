package backend_test

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// decodeAllocBound is the most DecodeEnvelope may allocate for an input of n bytes: what a
// valid envelope packed with tiny distinct metadata entries needs (map slots and growth, two
// strings per entry), far below what a count read from corrupt data could ask for.
func decodeAllocBound(n int) uint64 { return 64*uint64(n) + 64<<10 }

// decodeAlloc decodes data and returns how many bytes the decode allocated. TotalAlloc counts
// the whole process, so the tests that use it do not run in parallel with others.
func decodeAlloc(data []byte) (backend.Envelope, error, uint64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	e, err := backend.DecodeEnvelope(data)
	runtime.ReadMemStats(&after)
	return e, err, after.TotalAlloc - before.TotalAlloc
}

// corruptCountBody is 1 MiB that claims count metadata entries after an empty UUID, then
// holds bytes that do not decode as the first key (a length past the end).
func corruptCountBody(count uint64) []byte {
	data := []byte{1, 0}
	data = binary.AppendUvarint(data, count)
	data = binary.AppendUvarint(data, 1<<40)
	return append(data, make([]byte, 1<<20-len(data))...)
}

// A corrupt entry must not make the decoder allocate for entries the data cannot hold. A
// 1 MiB body that claims a million metadata entries (each needs at least two bytes) and one
// that claims as many as could fit but holds garbage both fail at their first entry, having
// allocated next to nothing: no room is reserved for entries not yet read.
func TestDecodeBoundsAllocationByInput(t *testing.T) {
	for name, data := range map[string][]byte{
		"count the bytes cannot hold":      corruptCountBody(1 << 20),
		"count that fits, garbage entries": corruptCountBody(1 << 18),
	} {
		t.Run(name, func(t *testing.T) {
			_, err, alloc := decodeAlloc(data)
			require.True(t, errors.Is(err, backend.ErrCorruptEntry), "got %v", err)
			require.LessOrEqual(t, alloc, uint64(64<<10), "allocated %d bytes decoding %d bytes that fail at the first entry", alloc, len(data))
		})
	}
}

// The bound holds for valid input too: an envelope of many small distinct metadata entries,
// the most map a byte of input can buy.
func TestDecodeAllocationOfManyEntries(t *testing.T) {
	meta := make(map[string]string, 1<<16)
	for i := range 1 << 16 {
		meta[string([]byte{byte(i >> 8), byte(i)})] = ""
	}
	data := backend.EncodeEnvelope(backend.Envelope{UUID: "u", Metadata: meta})
	e, err, alloc := decodeAlloc(data)
	require.NoError(t, err)
	require.Len(t, e.Metadata, 1<<16)
	require.LessOrEqual(t, alloc, decodeAllocBound(len(data)), "allocated %d bytes decoding %d bytes", alloc, len(data))
	t.Logf("%d entries: %d bytes of input, %d allocated (%.1f per byte)", len(meta), len(data), alloc, float64(alloc)/float64(len(data)))
}
