// This file checks the run-record format of the package doc: Plan's records
// decode back to a Begin at the run's position, the state's chunks in order
// and an End whose count and CRC-32C match; every record has exactly one
// encoding, so the strict decoder refuses each way of bending one (a short or
// long record, an unknown kind, an empty or oversized chunk, a checksum with
// no chunks) with a *DecodeError that matches ErrMalformed, and bytes without
// the magic with ErrNotRunRecord. An entry that starts with the magic is
// refused to the owner (ErrLooksLikeRun). FuzzDecodeRecord feeds the decoder
// arbitrary bytes: it must never panic, must refuse or round-trip exactly,
// and must agree with IsRunRecord. Its seed corpus is in testdata/fuzz.
package checkpoint

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

func TestARunRoundTripsThroughTheDecoder(t *testing.T) {
	state := bytes.Repeat([]byte("0123456789"), 5) // 50 bytes
	at := journal.Seq(17)

	run := Plan(state, at, 16)

	if len(run) != 6 {
		t.Fatalf("50 bytes in chunks of 16 make %d records, want Begin + 4 chunks + End", len(run))
	}
	var got []byte
	for i, raw := range run {
		if !IsRunRecord(raw) {
			t.Fatalf("record %d lacks the magic", i)
		}
		r, err := DecodeRecord(raw)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(r.Encode(), raw) {
			t.Fatalf("record %d does not re-encode to its bytes", i)
		}
		switch {
		case i == 0:
			if r.Kind != KindBegin || r.CoversUpTo != at {
				t.Fatalf("first record %+v, want Begin{%d}", r, at)
			}
		case i == len(run)-1:
			if r.Kind != KindEnd || r.Chunks != 4 || r.CRC != Checksum(state) {
				t.Fatalf("last record %+v, want End{4, %08x}", r, Checksum(state))
			}
		default:
			if r.Kind != KindChunk || r.Index != uint32(i-1) {
				t.Fatalf("record %d: %+v", i, r)
			}
			got = append(got, r.Bytes...)
		}
	}
	if !bytes.Equal(got, state) {
		t.Fatalf("chunks carry %q", got)
	}
}

func TestTheDecoderIsStrict(t *testing.T) {
	m := []byte(Magic)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name string
		in   []byte
		want error
		why  string
	}{
		{"empty", nil, ErrNotRunRecord, ""},
		{"an entry", []byte("k=v"), ErrNotRunRecord, ""},
		{"most of the magic", m[:7], ErrNotRunRecord, ""},
		{"the magic alone", m, ErrMalformed, "no kind byte"},
		{"kind zero", cat(m, []byte{0}), ErrMalformed, "unknown kind"},
		{"kind four", cat(m, []byte{4, 0, 0, 0, 0}), ErrMalformed, "unknown kind"},
		{"a short Begin", cat(m, []byte{1, 1, 0, 0}), ErrMalformed, "want 17 bytes"},
		{"a long Begin", cat(Begin(3).Encode(), []byte{0}), ErrMalformed, "want 17 bytes"},
		{"a Begin at position zero", cat(m, []byte{1}, make([]byte, 8)), ErrMalformed, "covers_up_to"},
		{"a chunk without an index", cat(m, []byte{2, 0, 0}), ErrMalformed, "no chunk index"},
		{"an empty chunk", cat(m, []byte{2, 0, 0, 0, 0}), ErrMalformed, "chunk of 0 bytes"},
		{"a chunk index past the limit", cat(m, []byte{2, 0, 0, 1, 0, 'x'}), ErrMalformed, "chunk index"},
		{"an oversized chunk", cat(m, []byte{2, 0, 0, 0, 0}, make([]byte, ChunkBytesMax+1)), ErrMalformed, "chunk of"},
		{"a short End", cat(m, []byte{3, 0, 0, 0, 0}), ErrMalformed, "want 17 bytes"},
		{"an End past the chunk limit", cat(m, []byte{3, 1, 0, 1, 0, 0, 0, 0, 0}), ErrMalformed, "chunks >"},
		{"a checksum with no chunks", cat(m, []byte{3, 0, 0, 0, 0, 1, 0, 0, 0}), ErrMalformed, "no chunks but checksum"},
	} {
		_, err := DecodeRecord(tc.in)

		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		var de *DecodeError
		if tc.want == ErrMalformed && (!errors.As(err, &de) || !strings.Contains(de.Error(), tc.why)) {
			t.Fatalf("%s: %v does not say %q", tc.name, err, tc.why)
		}
		if IsRunRecord(tc.in) != (tc.want == ErrMalformed) {
			t.Fatalf("%s: IsRunRecord disagrees with the decoder", tc.name)
		}
	}
}

func TestEncodeRefusesARecordTheDecoderWouldRefuse(t *testing.T) {
	for name, r := range map[string]Record{
		"invalid kind":   {},
		"begin at zero":  Begin(0),
		"empty chunk":    Chunk(0, nil),
		"big index":      Chunk(ChunksMax, []byte("x")),
		"too many":       End(ChunksMax+1, 0),
		"crc, no chunks": End(0, 7),
	} {
		mustPanic(t, name, func() { r.Encode() })
	}
	for k, want := range map[Kind]string{KindBegin: "begin", KindChunk: "chunk", KindEnd: "end", 7: "kind(7)"} {
		if k.String() != want {
			t.Fatalf("%d prints %q", k, k)
		}
	}
}

func TestAnOwnerEntryThatLooksLikeARunRecordIsRefused(t *testing.T) {
	ok := [][]byte{[]byte("k=v"), []byte(Magic[:7]), []byte("x" + Magic)}
	bad := append(ok, []byte(Magic+"anything"))

	if err := CheckEntries(ok); err != nil {
		t.Fatalf("plain entries refused: %v", err)
	}
	err := CheckEntries(bad)
	if !errors.Is(err, ErrLooksLikeRun) || !strings.Contains(err.Error(), "record 3") {
		t.Fatalf("an entry with the magic: %v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, r := range Plan([]byte("a small state to fuzz from"), 5, 8) {
		f.Add(r)
	}
	f.Add([]byte(Magic))
	f.Add([]byte("k=v"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)

		switch {
		case err == nil:
			if !bytes.Equal(r.Encode(), b) {
				t.Fatalf("%x decodes to %+v, which encodes differently", b, r)
			}
		case errors.Is(err, ErrNotRunRecord):
			if IsRunRecord(b) {
				t.Fatalf("%x has the magic but is called an entry", b)
			}
		case errors.Is(err, ErrMalformed):
			if !IsRunRecord(b) {
				t.Fatalf("%x lacks the magic but is called malformed", b)
			}
		default:
			t.Fatalf("%x: an untyped error %v", b, err)
		}
		// A folder fed the record, in or out of a run, never panics.
		fo := NewFolder(nothing{}, 1)
		fo.Fold(1, Begin(1).Encode())
		fo.Fold(2, b)
		fo.Fold(3, End(1, Checksum(b)).Encode())
	})
}
