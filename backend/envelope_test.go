package backend_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	cases := []backend.Envelope{
		{},
		{UUID: "a", Payload: []byte{}},
		{UUID: "9f1c", Metadata: map[string]string{"k": "v", "": "empty key", "bin": "\x00\xff"}, Payload: []byte{0, 1, 2, 0xff}},
		{UUID: string(bytes.Repeat([]byte{'u'}, 300)), Payload: bytes.Repeat([]byte{0}, 1<<16)},
		{UUID: "0b9e3f4c-51a6-4c1e-9a57-3d2f8e6b7a10", Payload: []byte("canonical: 16 bytes")},
		{UUID: "0B9E3F4C-51A6-4C1E-9A57-3D2F8E6B7A10", Payload: []byte("upper case: kept as written")},
		{UUID: "{0b9e3f4c-51a6-4c1e-9a57-3d2f8e6b7a10}", Payload: []byte("braces: kept as written")},
		{UUID: "0b9e3f4c-51a6-4c1e-9a57-3d2f8e6b7a1g", Payload: []byte("not hex")},
	}
	for _, in := range cases {
		got, err := backend.DecodeEnvelope(backend.EncodeEnvelope(in))
		require.NoError(t, err)
		require.Equal(t, in.UUID, got.UUID)
		require.Equal(t, len(in.Metadata), len(got.Metadata))
		for k, v := range in.Metadata {
			require.Equal(t, v, got.Metadata[k])
		}
		require.True(t, bytes.Equal(in.Payload, got.Payload), "payload changed")
	}
}

// A canonical UUID, the kind watermill.NewUUID makes, costs 16 bytes instead of 37.
func TestEnvelopeStoresACanonicalUUIDAsSixteenBytes(t *testing.T) {
	payload := []byte("p")
	canonical := backend.EncodeEnvelope(backend.Envelope{UUID: "0b9e3f4c-51a6-4c1e-9a57-3d2f8e6b7a10", Payload: payload})
	upper := backend.EncodeEnvelope(backend.Envelope{UUID: "0B9E3F4C-51A6-4C1E-9A57-3D2F8E6B7A10", Payload: payload})
	require.Equal(t, byte(2), canonical[0])
	require.Equal(t, byte(1), upper[0])
	require.Equal(t, len(upper)-21, len(canonical))
}

func TestEnvelopeEncodingIsDeterministic(t *testing.T) {
	e := backend.Envelope{UUID: "u", Metadata: map[string]string{"b": "2", "a": "1", "c": "3"}, Payload: []byte("p")}
	require.Equal(t, backend.EncodeEnvelope(e), backend.EncodeEnvelope(e))
}

func TestDecodeRejectsCorruptInput(t *testing.T) {
	good := backend.EncodeEnvelope(backend.Envelope{UUID: "u", Metadata: map[string]string{"k": "v"}, Payload: []byte("payload")})
	cases := map[string][]byte{
		"empty":           nil,
		"unknown version": append([]byte{9}, good[1:]...),
		"truncated":       good[:len(good)-1],
		"trailing bytes":  append(append([]byte{}, good...), 0),
		"huge length":     {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"json":            []byte(`{"uuid":"x"}`),
		"short v2 uuid":   {2, 1, 2, 3},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := backend.DecodeEnvelope(in)
			require.Error(t, err)
			require.True(t, errors.Is(err, backend.ErrCorruptEntry), "got %v", err)
		})
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add(backend.EncodeEnvelope(backend.Envelope{UUID: "u", Metadata: map[string]string{"k": "v"}, Payload: []byte("p")}))
	f.Add([]byte{1, 0, 0, 0})
	f.Add(backend.EncodeEnvelope(backend.Envelope{UUID: "0b9e3f4c-51a6-4c1e-9a57-3d2f8e6b7a10", Payload: []byte("p")}))
	f.Add([]byte{})
	f.Add(corruptCountBody(1 << 20))
	f.Add(corruptCountBody(1 << 18))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err, alloc := decodeAlloc(data)
		if alloc > decodeAllocBound(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d (bound %d)", len(data), alloc, decodeAllocBound(len(data)))
		}
		if err != nil {
			if !errors.Is(err, backend.ErrCorruptEntry) {
				t.Fatalf("error does not wrap ErrCorruptEntry: %v", err)
			}
			return
		}
		// Whatever decodes must survive a round trip unchanged.
		again, err := backend.DecodeEnvelope(backend.EncodeEnvelope(e))
		if err != nil {
			t.Fatalf("re-decode failed: %v", err)
		}
		if again.UUID != e.UUID || !bytes.Equal(again.Payload, e.Payload) || len(again.Metadata) != len(e.Metadata) {
			t.Fatalf("round trip changed the envelope")
		}
	})
}
