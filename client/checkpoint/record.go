package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/parosdb/paros/core/journal"
)

// Magic prefixes every run record. Frozen.
const Magic = "\x00PRSCKP\x01"

// Limits of a run. Frozen: they are part of the record format.
const (
	// ChunkBytesMax bounds one chunk's bytes: half of the API's read page
	// (journal.ReadBytesMax), so a chunk record always fits in one page.
	ChunkBytesMax = 32 << 10
	// ChunksMax bounds the chunks of one run.
	ChunksMax = 1 << 16
	// StateBytesMax bounds a checkpointed state.
	StateBytesMax = ChunksMax * ChunkBytesMax
)

// ChunkBytesDefault is the chunk size Plan uses when asked for 0.
const ChunkBytesDefault = 16 << 10

const (
	headerBytes = len(Magic) + 1 // magic and kind
	beginBytes  = headerBytes + 8
	chunkHeader = headerBytes + 4
	endBytes    = headerBytes + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C an End names for a state: the checksum of its
// chunks' bytes in order.
func Checksum(state []byte) uint32 { return crc32.Checksum(state, castagnoli) }

// Kind tags a run record. The zero value is invalid.
type Kind uint8

const (
	KindInvalid Kind = iota
	KindBegin
	KindChunk
	KindEnd
)

func (k Kind) String() string {
	switch k {
	case KindBegin:
		return "begin"
	case KindChunk:
		return "chunk"
	case KindEnd:
		return "end"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Record is one decoded run record. Fields by kind:
//
//	Begin: CoversUpTo (the Begin's own position)
//	Chunk: Index, Bytes
//	End:   Chunks, CRC
type Record struct {
	Kind       Kind
	CoversUpTo journal.Seq
	Index      uint32
	Bytes      []byte
	Chunks     uint32
	CRC        uint32
}

// Begin, Chunk and End build the three records.
func Begin(coversUpTo journal.Seq) Record { return Record{Kind: KindBegin, CoversUpTo: coversUpTo} }

// Chunk builds chunk number index of a run.
func Chunk(index uint32, b []byte) Record { return Record{Kind: KindChunk, Index: index, Bytes: b} }

// End builds the commit record of a run of chunks chunks with checksum crc.
func End(chunks, crc uint32) Record { return Record{Kind: KindEnd, Chunks: chunks, CRC: crc} }

// Errors of the record format.
var (
	// ErrNotRunRecord: the bytes do not start with Magic; they are an entry.
	ErrNotRunRecord = errors.New("paros/checkpoint: not a run record")
	// ErrMalformed: the bytes start with Magic but are not a valid run
	// record. A DecodeError carries the detail.
	ErrMalformed = errors.New("paros/checkpoint: malformed run record")
)

// DecodeError says why DecodeRecord refused bytes that start with Magic.
// It matches ErrMalformed under errors.Is.
type DecodeError struct {
	Kind   Kind
	Length int
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%v: %s record of %d bytes: %s", ErrMalformed, e.Kind, e.Length, e.Reason)
}

// Unwrap makes a DecodeError match ErrMalformed.
func (e *DecodeError) Unwrap() error { return ErrMalformed }

// check reports why r is not a valid record, or nil.
func (r Record) check() error {
	switch r.Kind {
	case KindBegin:
		if r.CoversUpTo < journal.FirstSeq {
			return errors.New("covers_up_to below the first position")
		}
	case KindChunk:
		if r.Index >= ChunksMax {
			return fmt.Errorf("chunk index %d >= %d", r.Index, ChunksMax)
		}
		if len(r.Bytes) == 0 || len(r.Bytes) > ChunkBytesMax {
			return fmt.Errorf("chunk of %d bytes outside [1, %d]", len(r.Bytes), ChunkBytesMax)
		}
	case KindEnd:
		if r.Chunks > ChunksMax {
			return fmt.Errorf("%d chunks > %d", r.Chunks, ChunksMax)
		}
		if r.Chunks == 0 && r.CRC != 0 {
			return fmt.Errorf("no chunks but checksum %08x", r.CRC)
		}
	default:
		return fmt.Errorf("unknown kind %d", uint8(r.Kind))
	}
	return nil
}

// Encode returns the record's bytes. It panics on a record that breaks the
// format (a programmer error): what Encode writes, DecodeRecord reads back.
func (r Record) Encode() []byte {
	if err := r.check(); err != nil {
		panic(fmt.Sprintf("checkpoint: encoding an invalid %s record: %v", r.Kind, err))
	}
	b := make([]byte, 0, headerBytes+8+len(r.Bytes))
	b = append(b, Magic...)
	b = append(b, byte(r.Kind))
	switch r.Kind {
	case KindBegin:
		b = binary.LittleEndian.AppendUint64(b, uint64(r.CoversUpTo))
	case KindChunk:
		b = binary.LittleEndian.AppendUint32(b, r.Index)
		b = append(b, r.Bytes...)
	case KindEnd:
		b = binary.LittleEndian.AppendUint32(b, r.Chunks)
		b = binary.LittleEndian.AppendUint32(b, r.CRC)
	}
	return b
}

// IsRunRecord reports whether rec starts with Magic: a run record, or an
// entry that readers would take for one.
func IsRunRecord(rec []byte) bool { return bytes.HasPrefix(rec, []byte(Magic)) }

// DecodeRecord reads one run record. It returns ErrNotRunRecord for bytes
// without the magic and a *DecodeError (ErrMalformed) for bytes with it that
// break the format; it never panics. A Chunk's Bytes alias b.
func DecodeRecord(b []byte) (Record, error) {
	if !IsRunRecord(b) {
		return Record{}, ErrNotRunRecord
	}
	if len(b) < headerBytes {
		return Record{}, &DecodeError{Length: len(b), Reason: "no kind byte"}
	}
	r := Record{Kind: Kind(b[len(Magic)])}
	body := b[headerBytes:]
	bad := func(reason string) (Record, error) {
		return Record{}, &DecodeError{Kind: r.Kind, Length: len(b), Reason: reason}
	}
	switch r.Kind {
	case KindBegin:
		if len(b) != beginBytes {
			return bad(fmt.Sprintf("want %d bytes", beginBytes))
		}
		r.CoversUpTo = journal.Seq(binary.LittleEndian.Uint64(body))
	case KindChunk:
		if len(b) < chunkHeader {
			return bad("no chunk index")
		}
		r.Index = binary.LittleEndian.Uint32(body)
		r.Bytes = body[4:]
	case KindEnd:
		if len(b) != endBytes {
			return bad(fmt.Sprintf("want %d bytes", endBytes))
		}
		r.Chunks = binary.LittleEndian.Uint32(body)
		r.CRC = binary.LittleEndian.Uint32(body[4:])
	default:
		return bad("unknown kind")
	}
	if err := r.check(); err != nil {
		return bad(err.Error())
	}
	return r, nil
}
