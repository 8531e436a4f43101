// This file checks the Fold's rules one at a time (a table of logs, each
// folded from the start, with the event of every record and the state at
// the end), the record codec (a round trip, a foreign record, every
// malformed shape), and that a fold restarted at a renewal after a
// truncation is in the state of the fold that read the whole log.
package election

import (
	"errors"
	"testing"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

var (
	uA = journal.LeaderUUID{Hi: 0xa, Lo: 1}
	uB = journal.LeaderUUID{Hi: 0xb, Lo: 2}
	uC = journal.LeaderUUID{Hi: 0xc, Lo: 3}
)

// state is everything a Fold shows, for comparisons.
type state struct {
	Term      Term
	Leader    journal.LeaderUUID
	Iface     string
	Renewal   journal.Seq
	Successor journal.LeaderUUID
	Anchored  bool
}

func stateOf(f *Fold) state {
	l, iface, _ := f.Leader()
	return state{f.Term(), l, iface, f.LastRenewalSeq(), f.Successor(), f.Anchored()}
}

// foldAll folds recs from position 1 and returns the events.
func foldAll(f *Fold, recs ...[]byte) []EventKind {
	var out []EventKind
	for i, r := range recs {
		out = append(out, f.Apply(journal.Seq(i+1), r).Kind)
	}
	return out
}

func TestTheFoldRules(t *testing.T) {
	malformed := append([]byte(Magic), 0xff, 0xff)
	tests := []struct {
		name   string
		recs   [][]byte
		events []EventKind
		want   state
	}{
		{"an empty journal has term 0 and no leader", nil, nil,
			state{Anchored: true}},
		{"the first campaign for term 1 wins it",
			[][]byte{CampaignRecord(1, uA, "a:1")},
			[]EventKind{Elected},
			state{Term: 1, Leader: uA, Iface: "a:1", Anchored: true}},
		{"the first campaign for Term+1 wins and a second for the same term is stale",
			[][]byte{CampaignRecord(1, uA, "a"), CampaignRecord(1, uB, "b")},
			[]EventKind{Elected, Stale},
			state{Term: 1, Leader: uA, Iface: "a", Anchored: true}},
		{"a campaign for a term past Term+1 is stale",
			[][]byte{CampaignRecord(2, uA, "a")},
			[]EventKind{Stale},
			state{Anchored: true}},
		{"a stale campaign for an old term is ignored",
			[][]byte{CampaignRecord(1, uA, "a"), CampaignRecord(2, uB, "b"), CampaignRecord(2, uA, "a"), CampaignRecord(1, uC, "c")},
			[]EventKind{Elected, Elected, Stale, Stale},
			state{Term: 2, Leader: uB, Iface: "b", Anchored: true}},
		{"a campaign for Term+1 deposes a live leader",
			[][]byte{CampaignRecord(1, uA, "a"), RenewRecord(1, uA, "a"), CampaignRecord(2, uB, "b")},
			[]EventKind{Elected, Renewed, Elected},
			state{Term: 2, Leader: uB, Iface: "b", Anchored: true}},
		{"the leader's renewal refreshes it and republishes its interface",
			[][]byte{CampaignRecord(1, uA, "a"), RenewRecord(1, uA, "a2")},
			[]EventKind{Elected, Renewed},
			state{Term: 1, Leader: uA, Iface: "a2", Renewal: 2, Anchored: true}},
		{"a renewal of another uuid is ignored",
			[][]byte{CampaignRecord(1, uA, "a"), RenewRecord(1, uB, "b")},
			[]EventKind{Elected, Stale},
			state{Term: 1, Leader: uA, Iface: "a", Anchored: true}},
		{"a renewal of an old term by its old leader is ignored",
			[][]byte{CampaignRecord(1, uA, "a"), CampaignRecord(2, uB, "b"), RenewRecord(1, uA, "a")},
			[]EventKind{Elected, Elected, Stale},
			state{Term: 2, Leader: uB, Iface: "b", Anchored: true}},
		{"a renewal for a term above the fold's is adopted",
			[][]byte{CampaignRecord(1, uA, "a"), RenewRecord(3, uB, "b")},
			[]EventKind{Elected, Adopted},
			state{Term: 3, Leader: uB, Iface: "b", Renewal: 2, Anchored: true}},
		{"a resign ends the leadership, keeps the term and notes the successor",
			[][]byte{CampaignRecord(1, uA, "a"), RenewRecord(1, uA, "a"), ResignRecord(1, uA, uB)},
			[]EventKind{Elected, Renewed, Resigned},
			state{Term: 1, Successor: uB, Anchored: true}},
		{"after a resign the next campaign is for Term+1, and its win clears the successor",
			[][]byte{CampaignRecord(1, uA, "a"), ResignRecord(1, uA, uB), CampaignRecord(1, uB, "b"), CampaignRecord(2, uC, "c")},
			[]EventKind{Elected, Resigned, Stale, Elected},
			state{Term: 2, Leader: uC, Iface: "c", Anchored: true}},
		{"a resign by another uuid, or of another term, is ignored",
			[][]byte{CampaignRecord(1, uA, "a"), ResignRecord(1, uB, uB), ResignRecord(2, uA, uB)},
			[]EventKind{Elected, Stale, Stale},
			state{Term: 1, Leader: uA, Iface: "a", Anchored: true}},
		{"a renewal after a resign is ignored",
			[][]byte{CampaignRecord(1, uA, "a"), ResignRecord(1, uA, journal.LeaderUUID{}), RenewRecord(1, uA, "a")},
			[]EventKind{Elected, Resigned, Stale},
			state{Term: 1, Anchored: true}},
		{"foreign records are ignored and malformed ones unreadable",
			[][]byte{[]byte("hello"), nil, CampaignRecord(1, uA, "a"), malformed, []byte(Magic)},
			[]EventKind{Ignored, Ignored, Elected, Unreadable, Unreadable},
			state{Term: 1, Leader: uA, Iface: "a", Anchored: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f Fold
			got := foldAll(&f, tc.recs...)
			if len(got) != len(tc.events) {
				t.Fatalf("events %v, want %v", got, tc.events)
			}
			for i := range got {
				if got[i] != tc.events[i] {
					t.Fatalf("events %v, want %v", got, tc.events)
				}
			}
			if s := stateOf(&f); s != tc.want {
				t.Fatalf("state %+v, want %+v", s, tc.want)
			}
		})
	}
}

func TestAnEventCarriesTheRecordsFields(t *testing.T) {
	var f Fold
	f.Apply(1, CampaignRecord(1, uA, "a"))
	ev := f.Apply(2, ResignRecord(1, uA, uB))
	want := Event{Kind: Resigned, Seq: 2, Term: 1, Candidate: uA, Successor: uB}
	if ev != want {
		t.Fatalf("event %+v, want %+v", ev, want)
	}
	ev = f.Apply(3, []byte(Magic+"\x08"))
	if ev.Kind != Unreadable || !errors.Is(ev.Err, ErrMalformed) || ev.Seq != 3 {
		t.Fatalf("a malformed record gave %+v", ev)
	}
}

func TestDecodeRefusesEveryMalformedShape(t *testing.T) {
	enc := func(r *pb.ElectionRecord) []byte { return Encode(r) }
	cand := wire.UUIDToPB(uA)
	lead := &pb.ElectionRecord_Campaign{Campaign: &pb.Leadership{Interface: "a"}}
	unknownBelow := &pb.Resign{}
	unknownBelow.ProtoReflect().SetUnknown(protoreflect.RawFields{0x78, 0x01})
	withUnknown := append(enc(&pb.ElectionRecord{Term: 1, Candidate: cand, Kind: lead}), 0x78, 0x01) // field 15, varint 1
	tests := []struct {
		name string
		rec  []byte
		want error
	}{
		{"no magic", []byte("\x00PRSELC\x02rest"), ErrNotElection},
		{"short", []byte("\x00PRS"), ErrNotElection},
		{"a body that does not unmarshal", append([]byte(Magic), 0x0a), ErrMalformed},
		{"no kind", enc(&pb.ElectionRecord{Term: 1, Candidate: cand}), ErrMalformed},
		{"term 0", enc(&pb.ElectionRecord{Candidate: cand, Kind: lead}), ErrMalformed},
		{"no candidate", enc(&pb.ElectionRecord{Term: 1, Kind: lead}), ErrMalformed},
		{"an unset candidate", enc(&pb.ElectionRecord{Term: 1, Candidate: &pb.LeaderUuid{}, Kind: lead}), ErrMalformed},
		{"an unknown field", withUnknown, ErrMalformed},
		{"an unknown field below", enc(&pb.ElectionRecord{Term: 1, Candidate: cand,
			Kind: &pb.ElectionRecord_Resign{Resign: unknownBelow}}), ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode(tc.rec); !errors.Is(err, tc.want) {
				t.Fatalf("Decode: %v, want %v", err, tc.want)
			}
		})
	}
	for _, rec := range [][]byte{CampaignRecord(7, uA, "x"), RenewRecord(7, uB, ""), ResignRecord(7, uC, uA), ResignRecord(7, uC, journal.LeaderUUID{})} {
		r, err := Decode(rec)
		if err != nil || r.GetTerm() != 7 {
			t.Fatalf("a record the encoders wrote: %v, %v", r, err)
		}
	}
}

func TestAFoldRestartedAtARenewalAfterATruncationHasTheSameLeader(t *testing.T) {
	// Arrange: a log with two terms, renewals, foreign and stale records;
	// the leader of term 2 truncates up to its latest renewal.
	log := [][]byte{
		CampaignRecord(1, uA, "a"), RenewRecord(1, uA, "a"), []byte("other"),
		CampaignRecord(2, uB, "b"), CampaignRecord(2, uC, "c"), RenewRecord(1, uA, "a"),
		RenewRecord(2, uB, "b1"), RenewRecord(2, uB, "b2"), []byte("other"),
	}
	var whole Fold
	foldAll(&whole, log...)
	cut := whole.LastRenewalSeq() // 8
	if cut != 8 {
		t.Fatalf("the whole fold's last renewal is at %d, want 8", cut)
	}

	// Act: a fold that met the gap [1, cut) resumes at cut.
	var late Fold
	late.Jump()
	var kinds []EventKind
	for s := cut; s <= journal.Seq(len(log)); s++ {
		kinds = append(kinds, late.Apply(s, log[s-1]).Kind)
	}

	// Check.
	if kinds[0] != Adopted {
		t.Fatalf("the first record after the gap gave %v, want adopted", kinds[0])
	}
	if stateOf(&late) != stateOf(&whole) {
		t.Fatalf("restarted %+v, whole %+v", stateOf(&late), stateOf(&whole))
	}
	if l, iface, ok := late.Leader(); !ok || l != uB || iface != "b2" || late.Term() != 2 {
		t.Fatalf("restarted leader %s %q %v at term %d", l, iface, ok, late.Term())
	}
}

func TestAJumpedFoldSkipsCampaignsAndResignsUntilARenewalAnchorsIt(t *testing.T) {
	var f Fold
	f.Apply(1, CampaignRecord(1, uA, "a"))
	f.Jump()
	if f.Anchored() || f.Term() != 0 {
		t.Fatalf("after Jump: %+v", stateOf(&f))
	}
	got := []EventKind{
		f.Apply(5, CampaignRecord(1, uB, "b")).Kind,
		f.Apply(6, ResignRecord(4, uC, uA)).Kind,
		f.Apply(7, []byte("x")).Kind,
		f.Apply(8, RenewRecord(4, uC, "c")).Kind,
		f.Apply(9, CampaignRecord(5, uA, "a")).Kind,
	}
	want := []EventKind{Skipped, Skipped, Ignored, Adopted, Elected}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	if s := stateOf(&f); s != (state{Term: 5, Leader: uA, Iface: "a", Anchored: true}) {
		t.Fatalf("state %+v", s)
	}
}
