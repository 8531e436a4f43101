package pebblestore

// These tests check the on-disk codecs of the package doc's tables: every
// value round-trips; every single-bit flip of an encoded value, and every
// truncation, is refused (CRC-32C catches every 1-bit error); a value read
// back under another key is refused (the CRC covers the key); keys parse
// back to what built them and sort by (journal, kind, slot). The fuzz
// targets feed hostile bytes to every decoder twice, as they are and
// re-sealed with a valid CRC so the parsing behind the checksum is reached
// too: a decoder never panics, and what it accepts re-encodes to the same
// bytes (one value, one encoding).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/storetest"
)

var codecJournal = journal.ID{Tenant: 0x0102030405060708, Journal: 0x1112131415161718}

func sampleMarker() storage.Marker {
	return storage.Marker{Journal: codecJournal, Node: 3, Members: []paxos.NodeID{1, 3, 5, 7},
		Quorum: quorum.Spec{Kind: quorum.KindMajority, Q1: -1, Q2: 1 << 20, Rows: 2, Cols: 2}, Mode: journal.ModeMulti,
		Proxies: 1, Replicas: 2, Matchmakers: 3}
}

type encoded struct {
	name     string
	key, val []byte
	decode   func(key, v []byte) error
}

func samples() []encoded {
	pk, ck, sk, mk := scalarKey(codecJournal, kindPromise), scalarKey(codecJournal, kindChosen),
		scalarKey(codecJournal, kindSeal), scalarKey(codecJournal, kindMarker)
	xk := scalarKey(codecJournal, kindScrub)
	ik := appendRecordKey(nil, codecJournal, 77, partIdentity)
	vk := appendRecordKey(nil, codecJournal, 77, partValue)
	m, err := encodeMarker(mk, sampleMarker())
	if err != nil {
		panic(err)
	}
	val := storage.AppendCommand(nil, storetest.Cmd(77, 1))
	ident := identity{origin: originLearned, ballot: paxos.Ballot{Round: 9, Node: 4}, valueLen: uint32(len(val))}
	ident.valueCRC = valueCRC(new([16]byte), vk, ident.ballot, val)
	return []encoded{
		{"promise", pk, encodePromise(pk, paxos.Ballot{Round: 1 << 40, Node: 7}), func(k, v []byte) error { _, err := decodePromise(k, v); return err }},
		{"chosen", ck, encodeChosen(ck, 1<<50), func(k, v []byte) error { _, err := decodeChosen(k, v); return err }},
		{"scrub cursor", xk, encodeScrubCursor(xk, 1<<45+3), func(k, v []byte) error { _, err := decodeScrubCursor(k, v); return err }},
		{"seal", sk, encodeSeal(sk, 12, storetest.Sealed(4, 100, 50)), func(k, v []byte) error { _, _, err := decodeSeal(k, v); return err }},
		{"marker", mk, m, func(k, v []byte) error { _, err := decodeMarker(k, v, codecJournal); return err }},
		{"identity", ik, encodeIdentity(nil, ik, ident), func(k, v []byte) error { _, err := decodeIdentity(k, v); return err }},
		{"value", vk, val, func(k, v []byte) error { _, err := checkValue(k, ident, v); return err }},
		{"header", keyStoreHeader, encodeHeader(), func(_, v []byte) error { return decodeHeader(v) }},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	pk := scalarKey(codecJournal, kindPromise)
	if b, err := decodePromise(pk, encodePromise(pk, paxos.Ballot{Round: 5, Node: 6})); err != nil || b != (paxos.Ballot{Round: 5, Node: 6}) {
		t.Fatalf("promise %s %v", b, err)
	}
	ck := scalarKey(codecJournal, kindChosen)
	if c, err := decodeChosen(ck, encodeChosen(ck, 99)); err != nil || c != 99 {
		t.Fatalf("chosen %d %v", c, err)
	}
	xk := scalarKey(codecJournal, kindScrub)
	if c, err := decodeScrubCursor(xk, encodeScrubCursor(xk, 77)); err != nil || c != 77 {
		t.Fatalf("scrub cursor %d %v", c, err)
	}
	// The cursor has the chosen index's layout; the key tells them apart.
	if _, err := decodeScrubCursor(xk, encodeChosen(ck, 77)); err == nil {
		t.Fatalf("a chosen index read as a scrub cursor")
	}
	sk := scalarKey(codecJournal, kindSeal)
	st := storetest.Sealed(4, 100, 50)
	if f, got, err := decodeSeal(sk, encodeSeal(sk, 12, st)); err != nil || f != 12 || got != st || got.Term() != 4 {
		t.Fatalf("seal %d %s %v", f, got, err)
	}
	if f, got, err := decodeSeal(sk, encodeSeal(sk, 1, journal.Initial())); err != nil || f != 1 || got != journal.Initial() {
		t.Fatalf("initial seal %d %s %v", f, got, err)
	}
	mk := scalarKey(codecJournal, kindMarker)
	enc, err := encodeMarker(mk, sampleMarker())
	if err != nil {
		t.Fatal(err)
	}
	if m, err := decodeMarker(mk, enc, codecJournal); err != nil || !m.Equal(sampleMarker()) || m.Quorum != sampleMarker().Quorum {
		t.Fatalf("marker %s %v", m, err)
	}
	// A replica node's marker (Node outside Members) and a joiner's keep
	// their flag through the codec.
	for _, flagged := range []storage.Marker{
		{Journal: codecJournal, Node: 1000, Members: []paxos.NodeID{1, 3, 5}, Mode: journal.ModeMulti, Replica: true},
		{Journal: codecJournal, Node: 5, Members: []paxos.NodeID{1, 3, 5}, Mode: journal.ModeSingle, Joiner: true},
	} {
		enc, err := encodeMarker(mk, flagged)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := decodeMarker(mk, enc, codecJournal); err != nil || !m.Equal(flagged) {
			t.Fatalf("marker %s decoded as %s %v", flagged, m, err)
		}
	}
	for _, s := range samples() {
		if err := s.decode(s.key, s.val); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
}

func TestCodecRefusesDamage(t *testing.T) {
	for _, s := range samples() {
		for i := range s.val {
			for bit := range 8 {
				v := bytes.Clone(s.val)
				v[i] ^= 1 << bit
				if s.decode(s.key, v) == nil {
					t.Fatalf("%s: flip of bit %d of byte %d accepted", s.name, bit, i)
				}
			}
		}
		for n := range len(s.val) {
			if s.decode(s.key, s.val[:n]) == nil {
				t.Fatalf("%s: truncation to %d bytes accepted", s.name, n)
			}
		}
		if s.decode(s.key, append(bytes.Clone(s.val), 0)) == nil {
			t.Fatalf("%s: a trailing byte accepted", s.name)
		}
		if s.name == "header" {
			continue
		}
		// Misdirected: the same bytes under the key of another journal or slot.
		other := bytes.Clone(s.key)
		other[len(other)-2] ^= 1
		if s.decode(other, s.val) == nil {
			t.Fatalf("%s: accepted under another key", s.name)
		}
	}
}

func TestCodecRefusesBadFields(t *testing.T) {
	mk := scalarKey(codecJournal, kindMarker)
	m := sampleMarker()
	m.Members = make([]paxos.NodeID, markerMembersMax+1)
	if _, err := encodeMarker(mk, m); !errors.Is(err, storage.ErrBadMarker) {
		t.Fatalf("marker with too many members: %v", err)
	}
	m = sampleMarker()
	m.Quorum.Q1 = 1 << 40
	if _, err := encodeMarker(mk, m); !errors.Is(err, storage.ErrBadMarker) {
		t.Fatalf("marker with a huge Q1: %v", err)
	}
	// A well-sealed marker naming another journal is refused.
	other := sampleMarker()
	other.Journal = journal.ID{Tenant: 1, Journal: 1}
	enc, _ := encodeMarker(mk, other)
	if _, err := decodeMarker(mk, enc, codecJournal); err == nil {
		t.Fatalf("a marker of another journal accepted")
	}
	// A well-sealed seal with floor 0 or a broken state is refused.
	sk := scalarKey(codecJournal, kindSeal)
	if _, _, err := decodeSeal(sk, encodeSeal(sk, 0, journal.Initial())); err == nil {
		t.Fatalf("floor 0 accepted")
	}
	// A well-sealed identity of unknown origin is refused.
	ik := appendRecordKey(nil, codecJournal, 1, partIdentity)
	if _, err := decodeIdentity(ik, encodeIdentity(nil, ik, identity{origin: 9})); err == nil {
		t.Fatalf("origin 9 accepted")
	}
}

func TestKeys(t *testing.T) {
	ids := []journal.ID{{Tenant: 1, Journal: 1}, {Tenant: 1, Journal: 2}, {Tenant: 2, Journal: 1}}
	var keys [][]byte
	for _, id := range ids {
		for _, kind := range []byte{kindMarker, kindPromise, kindChosen, kindSeal, kindScrub} {
			keys = append(keys, scalarKey(id, kind))
		}
		for _, s := range []paxos.Slot{0, 1, 255, 256, 1 << 40} {
			keys = append(keys, appendRecordKey(nil, id, s, partIdentity), appendRecordKey(nil, id, s, partValue))
		}
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Fatalf("keys do not sort by (journal, kind, slot, part)")
	}
	for _, k := range keys {
		p, ok := parseKey(k)
		if !ok {
			t.Fatalf("key %x does not parse", k)
		}
		var again []byte
		if p.kind == kindRecord {
			again = appendRecordKey(nil, p.id, p.slot, p.part)
		} else {
			again = scalarKey(p.id, p.kind)
		}
		if !bytes.Equal(again, k) {
			t.Fatalf("key %x parses to %+v", k, p)
		}
	}
	for _, id := range ids {
		lo, hi := journalBounds(id)
		for _, k := range keys {
			p, _ := parseKey(k)
			if in := bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0; in != (p.id == id) {
				t.Fatalf("key %x in bounds of %s: %v", k, id, in)
			}
		}
		if bytes.Compare(recordsEnd(id), hi) > 0 || bytes.Compare(recordsFrom(id, 0), lo) < 0 {
			t.Fatalf("record range of %s outside its bounds", id)
		}
	}
	for _, bad := range [][]byte{nil, {keyspaceJournal}, scalarKey(ids[0], 0x06), append(scalarKey(ids[0], kindScrub), 0), append(scalarKey(ids[0], kindSeal), 0),
		appendRecordKey(nil, ids[0], 1, 2), keyStoreHeader} {
		if _, ok := parseKey(bad); ok {
			t.Fatalf("key %x parsed", bad)
		}
	}
}

// reseal replaces the last four bytes of v (or appends them) with a valid CRC.
func reseal(key, v []byte) []byte {
	if len(v) < 4 {
		return v
	}
	body := v[:len(v)-4]
	return binary.BigEndian.AppendUint32(bytes.Clone(body), crcOf(key, body))
}

func FuzzDecodeScalar(f *testing.F) {
	for _, s := range samples() {
		switch s.name {
		case "promise", "chosen", "scrub cursor", "seal":
			f.Add(s.key[len(s.key)-1], s.val)
		}
	}
	f.Fuzz(func(t *testing.T, kind byte, v []byte) {
		k := scalarKey(codecJournal, kind)
		for _, v := range [][]byte{v, reseal(k, v)} {
			switch kind {
			case kindPromise:
				if b, err := decodePromise(k, v); err == nil && !bytes.Equal(encodePromise(k, b), v) {
					t.Fatalf("promise not canonical")
				}
			case kindChosen:
				if c, err := decodeChosen(k, v); err == nil && !bytes.Equal(encodeChosen(k, c), v) {
					t.Fatalf("chosen not canonical")
				}
			case kindScrub:
				if c, err := decodeScrubCursor(k, v); err == nil && !bytes.Equal(encodeScrubCursor(k, c), v) {
					t.Fatalf("scrub cursor not canonical")
				}
			default:
				if f, st, err := decodeSeal(k, v); err == nil && !bytes.Equal(encodeSeal(k, f, st), v) {
					t.Fatalf("seal not canonical")
				}
			}
		}
	})
}

func FuzzDecodeIdentity(f *testing.F) {
	for _, s := range samples() {
		if s.name == "identity" {
			f.Add(uint64(77), s.val)
		}
	}
	f.Fuzz(func(t *testing.T, slot uint64, v []byte) {
		k := appendRecordKey(nil, codecJournal, slot, partIdentity)
		for _, v := range [][]byte{v, reseal(k, v)} {
			id, err := decodeIdentity(k, v)
			if err != nil {
				if !errors.Is(err, errValue) {
					t.Fatalf("untyped error %v", err)
				}
				continue
			}
			if !bytes.Equal(encodeIdentity(nil, k, id), v) {
				t.Fatalf("identity not canonical")
			}
		}
	})
}

func FuzzDecodeMarker(f *testing.F) {
	for _, s := range samples() {
		if s.name == "marker" {
			f.Add(s.val)
		}
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		k := scalarKey(codecJournal, kindMarker)
		for _, v := range [][]byte{v, reseal(k, v)} {
			m, err := decodeMarker(k, v, codecJournal)
			if err != nil {
				if !errors.Is(err, errValue) {
					t.Fatalf("untyped error %v", err)
				}
				continue
			}
			again, err := encodeMarker(k, m)
			if err != nil || !bytes.Equal(again, v) {
				t.Fatalf("marker not canonical: %v", err)
			}
		}
	})
}

func FuzzCheckValue(f *testing.F) {
	for _, s := range samples() {
		if s.name == "value" {
			f.Add(s.val)
		}
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		// With an identity made for v, the value passes its checksums and
		// reaches the command decoder, which must refuse or round-trip it.
		k := appendRecordKey(nil, codecJournal, 3, partValue)
		id := identity{origin: originAccept, ballot: paxos.Ballot{Round: 1, Node: 1}, valueLen: uint32(len(v))}
		id.valueCRC = valueCRC(new([16]byte), k, id.ballot, v)
		cmd, err := checkValue(k, id, v)
		if err != nil {
			return
		}
		if !bytes.Equal(storage.AppendCommand(nil, cmd), v) {
			t.Fatalf("value not canonical")
		}
	})
}

// FormatJournals is all or nothing: one store already formatted refuses the
// whole batch, and the others stay unformatted.
func TestFormatJournalsIsAllOrNothing(t *testing.T) {
	db := mustOpen(t, vfs.NewMem())
	mk := func(n uint64) storage.Marker {
		m := sampleMarker()
		m.Journal = journal.ID{Tenant: 1, Journal: n}
		return m
	}
	if err := db.Journal(mk(2).Journal).Format(mk(2)); err != nil {
		t.Fatal(err)
	}
	err := db.FormatJournals([]storage.Marker{mk(1), mk(2), mk(3)})
	if !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("a batch naming a formatted store: %v, want ErrFormatted", err)
	}
	for _, n := range []uint64{1, 3} {
		bs, err := db.Journal(mk(n).Journal).Boot()
		if err != nil || bs.Marker != nil {
			t.Fatalf("journal %d after a refused batch: marker %v err %v, want unformatted", n, bs.Marker, err)
		}
	}
	if err := db.FormatJournals([]storage.Marker{mk(1), mk(3)}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []uint64{1, 3} {
		bs, err := db.Journal(mk(n).Journal).Boot()
		if err != nil || bs.Marker == nil || !bs.Marker.Equal(mk(n)) {
			t.Fatalf("journal %d: marker %v err %v", n, bs.Marker, err)
		}
	}
	if err := db.FormatJournals([]storage.Marker{mk(4), mk(4)}); !errors.Is(err, storage.ErrBadMarker) {
		t.Fatalf("a journal twice in one batch: %v, want ErrBadMarker", err)
	}
}
