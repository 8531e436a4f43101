package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

// Key schema constants (frozen: they are on disk; see the package doc).
const (
	keyspaceStore   byte = 0x00
	keyspaceJournal byte = 0x01

	kindMarker  byte = 0x01
	kindPromise byte = 0x02
	kindChosen  byte = 0x03
	kindSeal    byte = 0x04
	kindScrub   byte = 0x05 // the scrub cursor
	kindRecord  byte = 0x10

	partIdentity byte = 0x00
	partValue    byte = 0x01

	// journalPrefixLen is keyspace | tenant | journal.
	journalPrefixLen = 1 + 8 + 8
	// scalarKeyLen is a journal prefix and a kind.
	scalarKeyLen = journalPrefixLen + 1
	// recordKeyLen is a journal prefix, kindRecord, a slot and a part.
	recordKeyLen = journalPrefixLen + 1 + 8 + 1
)

// keyStoreHeader names the store header, the one key outside every journal.
var keyStoreHeader = []byte{keyspaceStore, 0x01}

// Value format constants (frozen).
const (
	valueV1 byte = 1

	originAccept  byte = 1
	originLearned byte = 2

	storeMagic     = "paros.pebblestore"
	headerBytes    = len(storeMagic) + 1 + 4
	promiseBytes   = 1 + 16 + 4
	chosenBytes    = 1 + 8 + 4
	scrubBytes     = 1 + 8 + 4
	sealBytes      = 1 + 8 + 16 + 8 + 8 + 8 + 4
	identityBytes  = 1 + 1 + 16 + 4 + 4 + 4
	markerMinBytes = 1 + 16 + 8 + 2 + 1 + 16 + 1 + 12 + 4

	// markerFlagJoiner is the optional flags byte of a joiner's marker.
	markerFlagJoiner = 1
	// markerFlagReplica is the flags byte of a replica node's marker.
	markerFlagReplica = 2

	// markerMembersMax bounds the members a marker may name.
	markerMembersMax = 1024
)

// errValue is the reason a scalar, identity or marker fails to decode; the
// caller wraps it in a *storage.CorruptionError naming the journal.
var errValue = errors.New("paros/pebblestore: bad value")

func valueErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errValue, fmt.Sprintf(format, args...))
}

func appendJournalPrefix(dst []byte, id journal.ID) []byte {
	dst = append(dst, keyspaceJournal)
	dst = binary.BigEndian.AppendUint64(dst, id.Tenant)
	return binary.BigEndian.AppendUint64(dst, id.Journal)
}

// journalBounds returns [lower, upper) covering every key of a journal.
func journalBounds(id journal.ID) (lower, upper []byte) {
	lower = appendJournalPrefix(nil, id)
	upper = appendJournalPrefix(nil, id)
	upper = append(upper, 0xff) // every kind byte is below 0xff
	return lower, upper
}

func scalarKey(id journal.ID, kind byte) []byte {
	return append(appendJournalPrefix(make([]byte, 0, scalarKeyLen), id), kind)
}

func appendRecordKey(dst []byte, id journal.ID, slot paxos.Slot, part byte) []byte {
	dst = appendJournalPrefix(dst, id)
	dst = append(dst, kindRecord)
	dst = binary.BigEndian.AppendUint64(dst, slot)
	return append(dst, part)
}

// recordsFrom returns the first record key at or after slot.
func recordsFrom(id journal.ID, slot paxos.Slot) []byte {
	return appendRecordKey(make([]byte, 0, recordKeyLen), id, slot, partIdentity)
}

// recordsEnd is past every record key of a journal.
func recordsEnd(id journal.ID) []byte {
	return append(appendJournalPrefix(make([]byte, 0, scalarKeyLen), id), kindRecord+1)
}

// parsedKey is a key of the journal keyspace.
type parsedKey struct {
	id   journal.ID
	kind byte
	slot paxos.Slot // kindRecord only
	part byte       // kindRecord only
}

// parseKey splits a journal key; ok is false for a key outside the schema.
func parseKey(k []byte) (parsedKey, bool) {
	if len(k) < scalarKeyLen || k[0] != keyspaceJournal {
		return parsedKey{}, false
	}
	p := parsedKey{
		id:   journal.ID{Tenant: binary.BigEndian.Uint64(k[1:]), Journal: binary.BigEndian.Uint64(k[9:])},
		kind: k[journalPrefixLen],
	}
	switch p.kind {
	case kindMarker, kindPromise, kindChosen, kindSeal, kindScrub:
		return p, len(k) == scalarKeyLen
	case kindRecord:
		if len(k) != recordKeyLen {
			return parsedKey{}, false
		}
		p.slot = binary.BigEndian.Uint64(k[scalarKeyLen:])
		p.part = k[recordKeyLen-1]
		return p, p.part == partIdentity || p.part == partValue
	}
	return parsedKey{}, false
}

// crcOf is the CRC-32C of key | body: every checksum binds a value to its key.
func crcOf(key, body []byte) uint32 {
	c := storage.CRC32C(key)
	return crcUpdate(c, body)
}

// castagnoli is the CRC-32C table (the one storage.CRC32C uses).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crcUpdate(c uint32, p []byte) uint32 { return crc32.Update(c, castagnoli, p) }

// seal appends the CRC of key | body to body.
func seal(key, body []byte) []byte {
	return binary.BigEndian.AppendUint32(body, crcOf(key, body))
}

// unseal checks length, version and CRC and returns the payload between the
// version byte and the CRC.
func unseal(key, v []byte, want int) ([]byte, error) {
	if want >= 0 && len(v) != want {
		return nil, valueErr("%d bytes, want %d", len(v), want)
	}
	if len(v) < 1+4 {
		return nil, valueErr("%d bytes", len(v))
	}
	body, sum := v[:len(v)-4], binary.BigEndian.Uint32(v[len(v)-4:])
	if got := crcOf(key, body); got != sum {
		return nil, valueErr("crc %08x, stored %08x", got, sum)
	}
	if body[0] != valueV1 {
		return nil, valueErr("version %d", body[0])
	}
	return body[1:], nil
}

func encodeHeader() []byte {
	b := append([]byte(storeMagic), valueV1)
	return seal(keyStoreHeader, b)
}

func decodeHeader(v []byte) error {
	if len(v) != headerBytes {
		return valueErr("store header of %d bytes", len(v))
	}
	body, sum := v[:len(v)-4], binary.BigEndian.Uint32(v[len(v)-4:])
	if got := crcOf(keyStoreHeader, body); got != sum {
		return valueErr("store header crc %08x, stored %08x", got, sum)
	}
	if string(body[:len(storeMagic)]) != storeMagic {
		return valueErr("store header magic %q", body[:len(storeMagic)])
	}
	if body[len(storeMagic)] != valueV1 {
		return valueErr("store header version %d", body[len(storeMagic)])
	}
	return nil
}

func appendBallot(dst []byte, b paxos.Ballot) []byte {
	dst = binary.BigEndian.AppendUint64(dst, b.Round)
	return binary.BigEndian.AppendUint64(dst, uint64(b.Node))
}

func readBallot(p []byte) paxos.Ballot {
	return paxos.Ballot{Round: binary.BigEndian.Uint64(p), Node: paxos.NodeID(binary.BigEndian.Uint64(p[8:]))}
}

func encodePromise(key []byte, b paxos.Ballot) []byte {
	return seal(key, appendBallot(append(make([]byte, 0, promiseBytes), valueV1), b))
}

func decodePromise(key, v []byte) (paxos.Ballot, error) {
	p, err := unseal(key, v, promiseBytes)
	if err != nil {
		return paxos.Ballot{}, err
	}
	return readBallot(p), nil
}

func encodeChosen(key []byte, s paxos.Slot) []byte {
	return seal(key, binary.BigEndian.AppendUint64(append(make([]byte, 0, chosenBytes), valueV1), s))
}

func decodeChosen(key, v []byte) (paxos.Slot, error) {
	p, err := unseal(key, v, chosenBytes)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(p), nil
}

// encodeScrubCursor encodes the scrub cursor: the chosen index's layout
// under its own kind (the CRC covers the key, so neither reads as the other).
func encodeScrubCursor(key []byte, s paxos.Slot) []byte {
	return seal(key, binary.BigEndian.AppendUint64(append(make([]byte, 0, scrubBytes), valueV1), s))
}

func decodeScrubCursor(key, v []byte) (paxos.Slot, error) {
	p, err := unseal(key, v, scrubBytes)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(p), nil
}

func encodeSeal(key []byte, floor paxos.Slot, st journal.State) []byte {
	b := append(make([]byte, 0, sealBytes), valueV1)
	b = binary.BigEndian.AppendUint64(b, floor)
	b = binary.BigEndian.AppendUint64(b, st.Leader.Hi)
	b = binary.BigEndian.AppendUint64(b, st.Leader.Lo)
	b = binary.BigEndian.AppendUint64(b, st.Term())
	b = binary.BigEndian.AppendUint64(b, uint64(st.NextSeq))
	b = binary.BigEndian.AppendUint64(b, uint64(st.FirstSeq))
	return seal(key, b)
}

// decodeSeal returns the floor and the sealed state. A state that breaks a
// journal.State invariant is refused like a bad checksum.
func decodeSeal(key, v []byte) (paxos.Slot, journal.State, error) {
	p, err := unseal(key, v, sealBytes)
	if err != nil {
		return 0, journal.State{}, err
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(p[8*i:]) }
	floor := u(0)
	if floor < 1 {
		return 0, journal.State{}, valueErr("floor 0")
	}
	st, err := journal.Restore(journal.LeaderUUID{Hi: u(1), Lo: u(2)}, u(3), journal.Seq(u(4)), journal.Seq(u(5)))
	if err != nil {
		return 0, journal.State{}, valueErr("sealed state: %v", err)
	}
	return floor, st, nil
}

// identity is what survives of a record when its value does not.
type identity struct {
	origin   byte
	ballot   paxos.Ballot
	valueLen uint32
	valueCRC uint32
}

// valueCRC is the CRC-32C binding a value to its journal, slot and ballot.
// scratch is where it encodes the ballot (the commit path passes one that
// does not escape per call).
func valueCRC(scratch *[16]byte, valueKey []byte, b paxos.Ballot, value []byte) uint32 {
	binary.BigEndian.PutUint64(scratch[:], b.Round)
	binary.BigEndian.PutUint64(scratch[8:], uint64(b.Node))
	return crcUpdate(crcUpdate(crcUpdate(0, valueKey), scratch[:]), value)
}

func encodeIdentity(dst, key []byte, id identity) []byte {
	start := len(dst)
	dst = append(dst, valueV1, id.origin)
	dst = appendBallot(dst, id.ballot)
	dst = binary.BigEndian.AppendUint32(dst, id.valueLen)
	dst = binary.BigEndian.AppendUint32(dst, id.valueCRC)
	return binary.BigEndian.AppendUint32(dst, crcOf(key, dst[start:]))
}

func decodeIdentity(key, v []byte) (identity, error) {
	p, err := unseal(key, v, identityBytes)
	if err != nil {
		return identity{}, err
	}
	id := identity{
		origin:   p[0],
		ballot:   readBallot(p[1:]),
		valueLen: binary.BigEndian.Uint32(p[17:]),
		valueCRC: binary.BigEndian.Uint32(p[21:]),
	}
	if id.origin != originAccept && id.origin != originLearned {
		return identity{}, valueErr("origin %d", id.origin)
	}
	return id, nil
}

// checkValue decodes a record value against its identity. An error means the
// value is damaged: the record is faulty(slot, ballot).
func checkValue(valueKey []byte, id identity, v []byte) (journal.Command, error) {
	if uint64(len(v)) != uint64(id.valueLen) {
		return journal.Command{}, valueErr("value of %d bytes, identity says %d", len(v), id.valueLen)
	}
	if got := valueCRC(new([16]byte), valueKey, id.ballot, v); got != id.valueCRC {
		return journal.Command{}, valueErr("value crc %08x, identity says %08x", got, id.valueCRC)
	}
	return storage.DecodeCommand(v)
}

func appendI32(dst []byte, v int) []byte { return binary.BigEndian.AppendUint32(dst, uint32(int32(v))) }

func encodeMarker(key []byte, m storage.Marker) ([]byte, error) {
	if len(m.Members) > markerMembersMax {
		return nil, fmt.Errorf("%w: %d members (max %d)", storage.ErrBadMarker, len(m.Members), markerMembersMax)
	}
	for _, v := range []int{m.Quorum.Q1, m.Quorum.Q2, m.Quorum.Rows, m.Quorum.Cols} {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fmt.Errorf("%w: quorum parameter %d out of range", storage.ErrBadMarker, v)
		}
	}
	b := make([]byte, 0, markerMinBytes+8*len(m.Members))
	b = append(b, valueV1)
	b = binary.BigEndian.AppendUint64(b, m.Journal.Tenant)
	b = binary.BigEndian.AppendUint64(b, m.Journal.Journal)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Node))
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Members)))
	for _, id := range m.Members {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	b = append(b, byte(m.Quorum.Kind))
	b = appendI32(b, m.Quorum.Q1)
	b = appendI32(b, m.Quorum.Q2)
	b = appendI32(b, m.Quorum.Rows)
	b = appendI32(b, m.Quorum.Cols)
	b = append(b, byte(m.Mode))
	b = binary.BigEndian.AppendUint32(b, m.Proxies)
	b = binary.BigEndian.AppendUint32(b, m.Replicas)
	b = binary.BigEndian.AppendUint32(b, m.Matchmakers)
	switch {
	case m.Joiner:
		// An optional flags byte: markers written before joiners existed
		// end at the matchmaker count and still decode.
		b = append(b, markerFlagJoiner)
	case m.Replica:
		b = append(b, markerFlagReplica)
	}
	return seal(key, b), nil
}

// decodeMarker checks the marker's length and CRC and that it names the
// journal of its key (a misdirected marker is refused).
func decodeMarker(key, v []byte, jid journal.ID) (storage.Marker, error) {
	if len(v) < markerMinBytes {
		return storage.Marker{}, valueErr("marker of %d bytes", len(v))
	}
	n := int(binary.BigEndian.Uint16(v[25:]))
	if n > markerMembersMax {
		return storage.Marker{}, valueErr("marker with %d members", n)
	}
	want := markerMinBytes + 8*n
	if len(v) == want+1 {
		want++ // the flags byte
	}
	p, err := unseal(key, v, want)
	if err != nil {
		return storage.Marker{}, err
	}
	u64 := func() uint64 { x := binary.BigEndian.Uint64(p); p = p[8:]; return x }
	u32 := func() uint32 { x := binary.BigEndian.Uint32(p); p = p[4:]; return x }
	var m storage.Marker
	m.Journal = journal.ID{Tenant: u64(), Journal: u64()}
	m.Node = paxos.NodeID(u64())
	p = p[2:]
	if n > 0 {
		m.Members = make([]paxos.NodeID, n)
		for i := range m.Members {
			m.Members[i] = paxos.NodeID(u64())
		}
	}
	m.Quorum.Kind = quorum.Kind(p[0])
	p = p[1:]
	m.Quorum.Q1 = int(int32(u32()))
	m.Quorum.Q2 = int(int32(u32()))
	m.Quorum.Rows = int(int32(u32()))
	m.Quorum.Cols = int(int32(u32()))
	m.Mode = journal.WriterMode(p[0])
	p = p[1:]
	m.Proxies, m.Replicas, m.Matchmakers = u32(), u32(), u32()
	if len(p) == 1 {
		switch p[0] {
		case markerFlagJoiner:
			m.Joiner = true
		case markerFlagReplica:
			m.Replica = true
		default:
			return storage.Marker{}, valueErr("marker flags %#x", p[0])
		}
	}
	if m.Journal != jid {
		return storage.Marker{}, valueErr("marker names journal %s under the key of %s", m.Journal, jid)
	}
	return m, nil
}
