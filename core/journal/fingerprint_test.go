// This file checks Command.Fingerprint and Command.Equal, the pair a leader
// relies on to credit an Accepted only for the value it proposed. It checks
// four things: (1) pairs of commands differing in exactly one field, or in
// framing alone (a byte moved across a record boundary, an empty record
// against no record, the kind tag), get different fingerprints and are not
// Equal; (2) pairs that are Equal (nil against empty slices, fields the kind
// does not carry, copies on fresh memory) get equal fingerprints; (3) the
// fingerprint equals FNV-1a 64 from the standard library's hash/fnv over the
// documented framing (kind byte, then little-endian u64 fields and
// length-prefixed records), so the hand-rolled hash is the real FNV-1a; and
// (4) a few golden values stay frozen, since fingerprints travel between
// nodes of different versions.
package journal

import (
	"encoding/binary"
	"hash/fnv"
	"testing"
)

// modelFingerprint restates the framing with the standard library's FNV-1a.
func modelFingerprint(c Command) uint64 {
	h := fnv.New64a()
	u64 := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	uuid := func(u LeaderUUID) { u64(u.Hi); u64(u.Lo) }
	h.Write([]byte{byte(c.Kind)})
	switch c.Kind {
	case KindWrite:
		uuid(c.Entry.Leader)
		u64(uint64(c.Entry.Seq))
		u64(uint64(len(c.Entry.Records)))
		for _, r := range c.Entry.Records {
			u64(uint64(len(r)))
			h.Write(r)
		}
	case KindTruncate:
		uuid(c.Leader)
		u64(uint64(c.UpTo))
	case KindSetLeader:
		uuid(c.New)
		uuid(c.Old)
	}
	return h.Sum64()
}

func write(leader LeaderUUID, seq Seq, rs [][]byte) Command {
	return Write(Entry{Leader: leader, Seq: seq, Records: rs})
}

// TestFingerprintDiffersOnEveryField checks that changing any one field, or
// only the framing, changes both the fingerprint and Equal.
func TestFingerprintDiffersOnEveryField(t *testing.T) {
	base := write(uA, 4, recs("ab", "c"))
	cases := []struct {
		name string
		a, b Command
	}{
		{"write: leader high half", base, write(LeaderUUID{Hi: 0xb, Lo: 1}, 4, recs("ab", "c"))},
		{"write: leader low half", base, write(LeaderUUID{Hi: 0xa, Lo: 2}, 4, recs("ab", "c"))},
		{"write: leader halves swapped", write(LeaderUUID{Hi: 1, Lo: 2}, 4, nil), write(LeaderUUID{Hi: 2, Lo: 1}, 4, nil)},
		{"write: leader unset", base, write(unset, 4, recs("ab", "c"))},
		{"write: seq", base, write(uA, 5, recs("ab", "c"))},
		{"write: a record byte", base, write(uA, 4, recs("ab", "d"))},
		{"write: a byte moved across a record boundary", base, write(uA, 4, recs("a", "bc"))},
		{"write: records joined", base, write(uA, 4, recs("abc"))},
		{"write: records reordered", base, write(uA, 4, recs("c", "ab"))},
		{"write: empty record against no record", write(uA, 4, recs("")), write(uA, 4, recs())},
		{"write: two empty records against one", write(uA, 4, recs("", "")), write(uA, 4, recs(""))},
		{"write: trailing empty record", base, write(uA, 4, recs("ab", "c", ""))},
		{"write: leading empty record", base, write(uA, 4, recs("", "ab", "c"))},
		{"write: zero byte against empty record", write(uA, 4, [][]byte{{0}}), write(uA, 4, recs(""))},
		{"write: seq bytes against a record", write(uA, 0, recs("")), write(uA, 0, [][]byte{make([]byte, 8)})},
		{"truncate: leader", Truncate(uA, 7), Truncate(uB, 7)},
		{"truncate: up_to", Truncate(uA, 7), Truncate(uA, 8)},
		{"truncate: up_to high byte", Truncate(uA, 7), Truncate(uA, 7|1<<56)},
		{"set-leader: new", SetLeader(uA, uB), SetLeader(uC, uB)},
		{"set-leader: old", SetLeader(uA, uB), SetLeader(uA, uC)},
		{"set-leader: new and old swapped", SetLeader(uA, uB), SetLeader(uB, uA)},
		{"set-leader: old unset", SetLeader(uA, uB), SetLeader(uA, unset)},
		{"kind: write against truncate (zero fields)", Write(Entry{}), Truncate(unset, 0)},
		{"kind: truncate against set-leader (zero fields)", Truncate(unset, 0), SetLeader(unset, unset)},
		{"kind: set-leader against noop", SetLeader(unset, unset), Noop()},
		{"kind: noop against invalid", Noop(), Command{}},
		{"kind: write against noop", Write(Entry{}), Noop()},
		{"kind: unknown against invalid", Command{Kind: Kind(9)}, Command{}},
		{"kind: truncate against set-leader with the same uuid bytes",
			Command{Kind: KindTruncate, Leader: uA, UpTo: Seq(uB.Hi)},
			Command{Kind: KindSetLeader, New: uA, Old: LeaderUUID{Hi: uB.Hi}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange: the case's two commands.

			// Act.
			fa, fb := tc.a.Fingerprint(), tc.b.Fingerprint()

			// Check.
			if fa == fb {
				t.Errorf("%s and %s share fingerprint %016x", tc.a, tc.b, fa)
			}
			if tc.a.Equal(tc.b) || tc.b.Equal(tc.a) {
				t.Errorf("%s and %s are Equal", tc.a, tc.b)
			}
		})
	}
}

// TestFingerprintEqualForEqualCommands checks that commands Equal calls the
// same value share one fingerprint, whatever memory or stray fields they
// carry.
func TestFingerprintEqualForEqualCommands(t *testing.T) {
	base := write(uA, 4, recs("ab", "c"))
	cases := []struct {
		name string
		a, b Command
	}{
		{"write: the same value on fresh memory", base, write(LeaderUUID{Hi: 0xa, Lo: 1}, 4, [][]byte{[]byte("ab"), []byte("c")})},
		{"write: nil records against an empty batch", write(uA, 4, nil), write(uA, 4, recs())},
		{"write: nil record against an empty record", write(uA, 4, [][]byte{nil}), write(uA, 4, recs(""))},
		{"write: stray control fields", base, Command{Kind: KindWrite, Entry: base.Entry, Leader: uB, UpTo: 3, New: uC, Old: uA}},
		{"truncate: a stray entry", Truncate(uA, 7), Command{Kind: KindTruncate, Leader: uA, UpTo: 7, Entry: base.Entry, New: uB}},
		{"set-leader: stray fields", SetLeader(uA, uB), Command{Kind: KindSetLeader, New: uA, Old: uB, Leader: uC, UpTo: 1, Entry: base.Entry}},
		{"noop: stray fields", Noop(), Command{Kind: KindNoop, Entry: base.Entry, Leader: uA, UpTo: 9, New: uB, Old: uC}},
		{"invalid: stray fields", Command{}, Command{Entry: base.Entry, Leader: uA}},
		{"unknown kind: stray fields", Command{Kind: Kind(9)}, Command{Kind: Kind(9), UpTo: 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange: the case's two commands.

			// Act.
			fa, fb := tc.a.Fingerprint(), tc.b.Fingerprint()

			// Check.
			if !tc.a.Equal(tc.b) || !tc.b.Equal(tc.a) {
				t.Fatalf("%s and %s are not Equal", tc.a, tc.b)
			}
			if fa != fb {
				t.Errorf("Equal commands %s have fingerprints %016x and %016x", tc.a, fa, fb)
			}
		})
	}
}

// TestFingerprintIsFNV1a checks the hand-rolled hash against hash/fnv over
// the documented framing, for one command of every kind.
func TestFingerprintIsFNV1a(t *testing.T) {
	cmds := []Command{
		Command{},
		Write(Entry{}),
		write(uA, 4, recs("ab", "c")),
		write(LeaderUUID{Hi: ^uint64(0), Lo: ^uint64(0)}, ^Seq(0), [][]byte{nil, []byte("\x00\xff"), make([]byte, 300)}),
		Truncate(uB, 1<<40),
		SetLeader(uC, uA),
		Noop(),
		{Kind: Kind(250), UpTo: 7},
	}
	for _, c := range cmds {
		// Arrange.
		want := modelFingerprint(c)

		// Act.
		got := c.Fingerprint()

		// Check.
		if got != want {
			t.Errorf("%s: Fingerprint %016x, hash/fnv over the framing %016x", c, got, want)
		}
	}
}

// TestFingerprintGolden pins a few fingerprints. They are frozen: a change
// makes mixed-version nodes refuse each other's Accepted messages, so a
// failure here means the framing changed, not that the table needs updating.
func TestFingerprintGolden(t *testing.T) {
	cases := []struct {
		c    Command
		want uint64
	}{
		{Noop(), 0xaf63b94c8601b113},
		{Command{}, 0xaf63bd4c8601b7df},
		{write(LeaderUUID{Hi: 1, Lo: 2}, 3, recs("ab", "c")), 0x216b970577a0b2b7},
		{Truncate(LeaderUUID{Hi: 1, Lo: 2}, 3), 0x5e5d1da679f30325},
		{SetLeader(LeaderUUID{Hi: 1, Lo: 2}, LeaderUUID{Hi: 3, Lo: 4}), 0x5ae2b2ae1283af16},
	}
	for _, tc := range cases {
		// Arrange: the pinned value.

		// Act.
		got := tc.c.Fingerprint()

		// Check.
		if got != tc.want {
			t.Errorf("%s: Fingerprint %#016x, frozen value %#016x", tc.c, got, tc.want)
		}
	}
}

// TestEntryEqual checks the Duplicate test directly: same uuid, same
// position, byte-identical records, nothing else.
func TestEntryEqual(t *testing.T) {
	e := Entry{Leader: uA, Seq: 4, Records: recs("ab", "c")}
	cases := []struct {
		name string
		o    Entry
		want bool
	}{
		{"identical on fresh memory", Entry{Leader: uA, Seq: 4, Records: recs("ab", "c")}, true},
		{"other uuid", Entry{Leader: uB, Seq: 4, Records: recs("ab", "c")}, false},
		{"other seq", Entry{Leader: uA, Seq: 5, Records: recs("ab", "c")}, false},
		{"other split", Entry{Leader: uA, Seq: 4, Records: recs("a", "bc")}, false},
		{"fewer records", Entry{Leader: uA, Seq: 4, Records: recs("ab")}, false},
		{"more records", Entry{Leader: uA, Seq: 4, Records: recs("ab", "c", "")}, false},
		{"one byte", Entry{Leader: uA, Seq: 4, Records: recs("ab", "C")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange: the case's entry.

			// Act.
			got, back := e.Equal(tc.o), tc.o.Equal(e)

			// Check.
			if got != tc.want || back != tc.want {
				t.Fatalf("Equal = %v/%v, want %v", got, back, tc.want)
			}
		})
	}
}
