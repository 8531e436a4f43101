// This file checks the protobuf side of the registry: State is a
// checkpoint.Checkpointable; Decode is strict (no entry, unknown fields,
// bad wire bytes and invalid UTF-8 are malformed); every entry kind and a
// whole state survive the conversion both ways; Apply is Decode then Fold
// and a malformed record changes nothing, At included; Restore refuses
// undecodable and unreachable checkpoints and leaves the state as it was.
package registrypb

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client/checkpoint"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"google.golang.org/protobuf/encoding/protowire"
)

// State is what a checkpoint.Folder and a checkpoint.Checkpointer fold.
var _ checkpoint.Checkpointable = (*State)(nil)

func majority(members ...uint64) registry.Placement {
	return registry.Placement{Members: members, QuorumSystem: registry.QuorumMajority, WriterMode: registry.WriterSingle}
}

// everyKind is one entry of each kind, every field set.
var everyKind = []registry.Entry{
	registry.RegisterMachine(1, "m1:7000", "a"),
	registry.DrainMachine(1),
	registry.CreateTenant([]byte("r1"), "acme", 10),
	registry.DeleteTenant([]byte("r2"), "acme"),
	registry.CreateJournal([]byte("r3"), "acme", "orders", 100, registry.Placement{Members: []uint64{1, 2, 3, 4},
		QuorumSystem: registry.QuorumGrid, Phase1Quorum: 1, Phase2Quorum: 2, Rows: 2, Cols: 2, WriterMode: registry.WriterMulti}),
	registry.DeleteJournal([]byte("r4"), "acme", "orders"),
	registry.JournalGone(journal.ID{Tenant: 10, Journal: 100}),
}

func TestEntriesRoundTrip(t *testing.T) {
	for _, e := range everyKind {
		t.Run(e.Kind.String(), func(t *testing.T) {
			// Act.
			rec := Encode(EntryToPB(e))
			d, err := Decode(rec)

			// Check.
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := EntryFromPB(d); !reflect.DeepEqual(got, e) {
				t.Errorf("round trip = %+v, want %+v", got, e)
			}
			if !bytes.Equal(Encode(d), rec) {
				t.Error("re-encoding differs")
			}
		})
	}
}

// appendField appends an unknown varint field number num to b.
func appendField(b []byte, num protowire.Number) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, 1)
}

func TestDecodeRefuses(t *testing.T) {
	createJournal := Encode(EntryToPB(everyKind[4]))
	// A CreateJournal whose placement carries an unknown field 99.
	placement := appendField(marshal(PlacementToPB(majority(1))), 99)
	cj := protowire.AppendTag(nil, 5, protowire.BytesType)
	cj = protowire.AppendBytes(cj, placement)
	nestedUnknown := protowire.AppendTag(nil, 5, protowire.BytesType)
	nestedUnknown = protowire.AppendBytes(nestedUnknown, cj)
	// A CreateTenant whose name is not UTF-8.
	ct := protowire.AppendTag(nil, 2, protowire.BytesType)
	ct = protowire.AppendBytes(ct, []byte("a\xffb"))
	badUTF8 := protowire.AppendTag(nil, 3, protowire.BytesType)
	badUTF8 = protowire.AppendBytes(badUTF8, ct)

	cases := []struct {
		name string
		rec  []byte
	}{
		{"nil", nil},
		{"empty: no entry set", []byte{}},
		{"only an unknown field", appendField(nil, 99)},
		{"an entry and an unknown field", appendField(bytes.Clone(createJournal), 99)},
		{"an unknown field inside the placement", nestedUnknown},
		{"garbage", []byte{0xff, 0xff, 0xff}},
		{"truncated", createJournal[:len(createJournal)-1]},
		{"an entry field of the wrong wire type", appendField(nil, 3)},
		{"a name not UTF-8", badUTF8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			s := New()
			if err := s.Apply(1, Encode(EntryToPB(everyKind[0]))); err != nil {
				t.Fatal(err)
			}
			before, at := s.Checkpoint(), s.At()

			// Act.
			_, derr := Decode(tc.rec)
			err := s.Apply(2, tc.rec)

			// Check.
			if !errors.Is(derr, ErrMalformed) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v; Apply: %v; want ErrMalformed", derr, err)
			}
			if !bytes.Equal(s.Checkpoint(), before) || s.At() != at {
				t.Error("a malformed record changed the state")
			}
		})
	}
}

// fixture folds a small registry: machines, a tenant, a live and a
// deleting journal, a tombstone, and recorded refusals.
func fixture(t *testing.T) *State {
	t.Helper()
	s := New()
	for i, e := range []registry.Entry{
		registry.RegisterMachine(1, "m1:7000", "a"),
		registry.RegisterMachine(2, "m2:7000", "b"),
		registry.RegisterMachine(3, "m3:7000", ""),
		registry.DrainMachine(3),
		registry.CreateTenant([]byte("t"), "acme", 10),
		registry.CreateJournal([]byte("j1"), "acme", "live", 100, majority(1, 2)),
		registry.CreateJournal([]byte("j2"), "acme", "dying", 101, majority(1)),
		registry.CreateJournal([]byte("j3"), "acme", "old", 102, majority(2)),
		registry.DeleteJournal([]byte("d2"), "acme", "dying"),
		registry.DeleteJournal([]byte("d3"), "acme", "old"),
		registry.JournalGone(journal.ID{Tenant: 10, Journal: 102}),
		registry.CreateJournal([]byte("j4"), "acme", "live", 103, majority(1)),
		registry.CreateTenant([]byte("t2"), "a/b", 11),
	} {
		if err := s.Apply(journal.Seq(i+1), Encode(EntryToPB(e))); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestCheckpointRoundTrips(t *testing.T) {
	// Arrange.
	s := fixture(t)
	b := s.Checkpoint()

	// Act.
	r := New()
	err := r.Restore(50, b)

	// Check.
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !bytes.Equal(r.Checkpoint(), b) || r.At() != 50 {
		t.Errorf("restored state differs, or At = %d", r.At())
	}
	if !reflect.DeepEqual(r.Snapshot(), s.Snapshot()) {
		t.Error("restored snapshot differs")
	}
	if !reflect.DeepEqual(SnapshotFromPB(s.Proto()), s.Snapshot()) {
		t.Error("Proto does not convert back to the snapshot")
	}
	if c := s.Clone(); !bytes.Equal(c.Checkpoint(), b) {
		t.Error("a clone encodes differently")
	}
	// The checkpoint depends on the state, not on At.
	if s.At() == r.At() || !bytes.Equal(s.Checkpoint(), r.Checkpoint()) {
		t.Error("checkpoint depends on At")
	}
}

func TestRestoreRefuses(t *testing.T) {
	good := fixture(t).Proto()
	unreachable := fixture(t).Proto()
	unreachable.Tenants[0].Journals[0].Standing = pb.JournalStanding_JOURNAL_STANDING_UNSPECIFIED
	dupMachine := fixture(t).Proto()
	dupMachine.Machines = append(dupMachine.Machines, dupMachine.Machines[0])
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"garbage", []byte{0xff, 0x01}, ErrMalformed},
		{"an unknown field", appendField(EncodeState(good), 99), ErrMalformed},
		{"a journal of no standing", EncodeState(unreachable), registry.ErrBadSnapshot},
		{"a machine twice", EncodeState(dupMachine), registry.ErrBadSnapshot},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			s := fixture(t)
			before, at := s.Checkpoint(), s.At()

			// Act.
			err := s.Restore(99, tc.b)

			// Check.
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !bytes.Equal(s.Checkpoint(), before) || s.At() != at {
				t.Error("a refused restore changed the state")
			}
		})
	}
}

// TestEmptyCheckpoint: a fresh registry's checkpoint is empty bytes and
// restores to a fresh registry.
func TestEmptyCheckpoint(t *testing.T) {
	s := New()
	if b := s.Checkpoint(); len(b) != 0 {
		t.Errorf("fresh checkpoint = %x", b)
	}
	if err := s.Restore(7, nil); err != nil || s.At() != 7 {
		t.Errorf("restore of nothing: %v, At %d", err, s.At())
	}
}

// EncodeEntries is the records of one append, in order, each decoding to
// its entry.
func TestEncodeEntriesDecodesBackInOrder(t *testing.T) {
	es := []registry.Entry{
		registry.RegisterMachine(7, "m7:7400", "rack-1"),
		registry.JournalGone(journal.ID{Tenant: 3, Journal: 9}),
	}
	recs := EncodeEntries(es)
	if len(recs) != len(es) {
		t.Fatalf("%d records for %d entries", len(recs), len(es))
	}
	for i, rec := range recs {
		pe, err := Decode(rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got := EntryFromPB(pe); !reflect.DeepEqual(got, es[i]) {
			t.Errorf("record %d decodes to %+v, want %+v", i, got, es[i])
		}
	}
}
