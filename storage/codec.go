package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/parosdb/paros/core/journal"
)

// Command value format, version 1 (frozen: it is on disk):
//
//	offset  size      field
//	------  --------  ------------------------------------------------
//	0       1         version (commandCodecV1 = 1)
//	1       1         kind (journal.Kind: 1 write, 2 truncate, 3 set-leader, 4 noop)
//	write:     16 leader uuid (hi, lo big-endian) | uvarint seq |
//	           uvarint record count | per record: uvarint length, bytes
//	truncate:  16 leader uuid | uvarint up_to
//	set-leader: 16 new uuid | 16 old uuid
//	noop:      nothing
//
// Trailing bytes are refused; a record count or length larger than the
// bytes left is refused before anything is allocated.
const commandCodecV1 = 1

// ErrBadValue reports a stored command that does not decode.
var ErrBadValue = errors.New("paros/storage: malformed command value")

// castagnoli is the CRC-32C table every checksum in paros uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC-32C of p.
func CRC32C(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// AppendCommand appends the encoding of c to dst.
func AppendCommand(dst []byte, c journal.Command) []byte {
	dst = append(dst, commandCodecV1, byte(c.Kind))
	switch c.Kind {
	case journal.KindWrite:
		dst = appendUUID(dst, c.Entry.Leader)
		dst = binary.AppendUvarint(dst, uint64(c.Entry.Seq))
		dst = binary.AppendUvarint(dst, uint64(len(c.Entry.Records)))
		for _, r := range c.Entry.Records {
			dst = binary.AppendUvarint(dst, uint64(len(r)))
			dst = append(dst, r...)
		}
	case journal.KindTruncate:
		dst = appendUUID(dst, c.Leader)
		dst = binary.AppendUvarint(dst, uint64(c.UpTo))
	case journal.KindSetLeader:
		dst = appendUUID(dst, c.New)
		dst = appendUUID(dst, c.Old)
	}
	return dst
}

func appendUUID(dst []byte, u journal.LeaderUUID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, u.Hi)
	return binary.BigEndian.AppendUint64(dst, u.Lo)
}

type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadValue, what)
	}
}

func (d *decoder) uuid() journal.LeaderUUID {
	if len(d.p) < 16 {
		d.fail("short uuid")
		return journal.LeaderUUID{}
	}
	u := journal.LeaderUUID{Hi: binary.BigEndian.Uint64(d.p), Lo: binary.BigEndian.Uint64(d.p[8:])}
	d.p = d.p[16:]
	return u
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	if n != uvarintLen(v) {
		d.fail("overlong varint") // one value, one encoding
		return 0
	}
	d.p = d.p[n:]
	return v
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// DecodeCommand decodes a value written by AppendCommand. Record bytes alias
// p; a caller that reuses p must copy them. It never panics.
func DecodeCommand(p []byte) (journal.Command, error) {
	if len(p) < 2 {
		return journal.Command{}, fmt.Errorf("%w: %d bytes", ErrBadValue, len(p))
	}
	if p[0] != commandCodecV1 {
		return journal.Command{}, fmt.Errorf("%w: version %d", ErrBadValue, p[0])
	}
	d := decoder{p: p[2:]}
	c := journal.Command{Kind: journal.Kind(p[1])}
	switch c.Kind {
	case journal.KindWrite:
		c.Entry.Leader = d.uuid()
		c.Entry.Seq = journal.Seq(d.uvarint())
		n := d.uvarint()
		if d.err == nil && n > uint64(len(d.p)) {
			d.fail("record count past the value")
		}
		if d.err == nil && n > 0 {
			c.Entry.Records = make([][]byte, 0, n)
		}
		for i := uint64(0); d.err == nil && i < n; i++ {
			l := d.uvarint()
			if d.err == nil && l > uint64(len(d.p)) {
				d.fail("record length past the value")
				break
			}
			if d.err != nil {
				break
			}
			c.Entry.Records = append(c.Entry.Records, d.p[:l:l])
			d.p = d.p[l:]
		}
	case journal.KindTruncate:
		c.Leader = d.uuid()
		c.UpTo = journal.Seq(d.uvarint())
	case journal.KindSetLeader:
		c.New = d.uuid()
		c.Old = d.uuid()
	case journal.KindNoop:
	default:
		return journal.Command{}, fmt.Errorf("%w: kind %d", ErrBadValue, p[1])
	}
	if d.err != nil {
		return journal.Command{}, d.err
	}
	if len(d.p) != 0 {
		return journal.Command{}, fmt.Errorf("%w: %d trailing bytes", ErrBadValue, len(d.p))
	}
	return c, nil
}
