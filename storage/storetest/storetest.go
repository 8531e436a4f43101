// Package storetest is the conformance suite every storage.LogStore passes
// (docs/design/storage.md): memstore and pebblestore run the same tests
// through a Harness.
//
// The suite checks what the protocol relies on: ops apply in order and a
// batch is atomic across a crash; accepts upsert by slot; the promise is
// monotone; only the chosen index and the scrub cursor are relaxed; a
// truncation drops the prefix and seals the journal state (with its hidden
// term) in one write; TrimmedTo never touches the promise; a damaged value is
// reported as faulty(slot, ballot), scrubbed as damaged, and can be rewritten
// (Rewrite, or an OpRewrite in a batch: scrub_cases.go); the format marker
// round-trips and is never rewritten; and a failed sync surfaces as an
// IOError of unknown outcome, after which the store refuses writes until it
// is reopened.
//
// It also holds what crash tests share: HookFS, a vfs.FS wrapper that calls
// a hook just before every sync and rename (the durability seams), the
// crash-clone settings Keeps, and Matrix, which prints the seam matrix.
package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

// Harness drives one store under test.
type Harness interface {
	// Store returns the open store. It changes only across Crash.
	Store() storage.LogStore
	// Crash simulates a power loss and restart: every write that was not
	// synced is lost, the store is reopened and any failure cleared.
	Crash()
	// RotValue damages the stored value of the durable record at slot,
	// keeping its identity (slot, ballot). It reports whether slot held one.
	RotValue(slot paxos.Slot) bool
	// FailNextSync makes the next synced write fail as an fsync does (EIO).
	FailNextSync()
}

// JournalID is the journal every suite test formats.
var JournalID = journal.ID{Tenant: 0x7e, Journal: 0x42}

// TestMarker is a valid marker for JournalID.
func TestMarker() storage.Marker {
	return storage.Marker{Journal: JournalID, Node: 2, Members: []paxos.NodeID{1, 2, 3},
		Quorum: quorum.Spec{Kind: quorum.KindMajority}, Mode: journal.ModeSingle}
}

// Run runs the suite; open returns a harness over a fresh, empty store.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"FreshBoot", testFreshBoot},
		{"FormatMarkerRoundTrip", testFormatRoundTrip},
		{"RefuseReformat", testRefuseReformat},
		{"BootDecisionTable", testBootDecisions},
		{"OrderWithinBatch", testOrderWithinBatch},
		{"BatchAtomicity", testBatchAtomicity},
		{"UpsertBySlot", testUpsert},
		{"PromiseMonotone", testPromise},
		{"ChosenIndexRelaxed", testChosenIndex},
		{"TruncateSeals", testTruncate},
		{"TrimmedToKeepsPromise", testTrimmedTo},
		{"FaultyReporting", testFaulty},
		{"TruncateDropsFaulty", testTruncateFaulty},
		{"ScrubPages", testScrub},
		{"ScrubPagesBounded", testScrubPagesBounded},
		{"RewriteRepairsRot", testRewriteRepairsRot},
		{"ScrubCursorDurable", testScrubCursorDurable},
		{"FailedSyncRefusesWrites", testFailedSync},
		{"ColdReadsServeWhatWasDurable", testColdReads},
		{"BootLeavesTheChosenPrefixCold", testColdPrefix},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// Helpers for building ops.

func ballot(r uint64, n paxos.NodeID) paxos.Ballot { return paxos.Ballot{Round: r, Node: n} }

// Cmd returns a distinct write command for slot s (variant v).
func Cmd(s paxos.Slot, v int) journal.Command {
	return journal.Write(journal.Entry{Leader: journal.LeaderUUID{Hi: 1, Lo: uint64(v)}, Seq: journal.Seq(s),
		Records: [][]byte{[]byte(fmt.Sprintf("slot %d variant %d", s, v))}})
}

// Accept is an OpAccept of Cmd(s, v) at b.
func Accept(s paxos.Slot, b paxos.Ballot, v int) paxos.WriteOp {
	return paxos.WriteOp{Kind: paxos.OpAccept, Slot: s, Ballot: b, Command: Cmd(s, v)}
}

// Sealed returns a state with a leader and a term (>0), as a fold leaves it.
func Sealed(term uint64, next, first journal.Seq) journal.State {
	st, err := journal.Restore(journal.LeaderUUID{Hi: 9, Lo: term}, term, next, first)
	if err != nil {
		panic(err)
	}
	return st
}

// Render prints a boot state canonically (commands by fingerprint), so two
// boots compare as strings and a mismatch reads as a diff.
func Render(b *storage.BootState) string {
	var sb strings.Builder
	if b.Marker != nil {
		fmt.Fprintf(&sb, "marker %s\n", b.Marker)
	} else {
		sb.WriteString("marker none\n")
	}
	fmt.Fprintf(&sb, "promise %s chosen %d floor %d sealed %s\n", b.Hard.Promised, b.Hard.ChosenIndex, b.FirstSlot(), b.SealedState())
	recs, err := b.AllRecords()
	if err != nil {
		fmt.Fprintf(&sb, "cold prefix unreadable: %v\n", err)
	}
	for _, r := range recs {
		fmt.Fprintf(&sb, "record %d %s %s %016x\n", r.Slot, r.Ballot, r.Command, r.Command.Fingerprint())
	}
	for _, f := range b.Faulty {
		fmt.Fprintf(&sb, "faulty %d %s\n", f.Slot, f.Ballot)
	}
	return sb.String()
}

func mustApply(t *testing.T, s storage.LogStore, sync bool, ops ...paxos.WriteOp) {
	t.Helper()
	if err := s.Apply(ops, sync); err != nil {
		t.Fatalf("apply %v: %v", ops, err)
	}
}

func boot(t *testing.T, s storage.LogStore) *storage.BootState {
	t.Helper()
	b, err := s.Boot()
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	return b
}

func formatted(t *testing.T, h Harness) storage.LogStore {
	t.Helper()
	if err := h.Store().Format(TestMarker()); err != nil {
		t.Fatalf("format: %v", err)
	}
	return h.Store()
}

// crash restarts the store and checks the boot is what it was before
// (everything the test wrote was synced).
func crashSame(t *testing.T, h Harness) *storage.BootState {
	t.Helper()
	before := Render(boot(t, h.Store()))
	h.Crash()
	b := boot(t, h.Store())
	if got := Render(b); got != before {
		t.Fatalf("synced state changed across a crash:\nbefore:\n%s\nafter:\n%s", before, got)
	}
	return b
}

// Records is every intact record a boot reports: the cold prefix read back
// through the boot's ColdLog, then BootState.Records.
func Records(t testing.TB, b *storage.BootState) []paxos.SlotCommand {
	t.Helper()
	recs, err := b.AllRecords()
	if err != nil {
		t.Fatalf("read the cold prefix back: %v", err)
	}
	return recs
}

func wantRecords(t *testing.T, b *storage.BootState, want ...paxos.SlotCommand) {
	t.Helper()
	got := Records(t, b)
	if len(got) != len(want) {
		t.Fatalf("records:\n%s\nwant %d records %v", Render(b), len(want), want)
	}
	for i, w := range want {
		g := got[i]
		if g.Slot != w.Slot || g.Ballot != w.Ballot || !g.Command.Equal(w.Command) {
			t.Fatalf("record %d = (%d %s %s), want (%d %s %s)", i, g.Slot, g.Ballot, g.Command, w.Slot, w.Ballot, w.Command)
		}
	}
}

func rec(s paxos.Slot, b paxos.Ballot, v int) paxos.SlotCommand {
	return paxos.SlotCommand{Slot: s, Ballot: b, Command: Cmd(s, v)}
}

// The tests.

func testFreshBoot(t *testing.T, h Harness) {
	b := boot(t, h.Store())
	if b.Marker != nil || !b.Hard.Promised.IsZero() || b.Hard.ChosenIndex != 0 || b.FirstSlot() != 1 ||
		b.SealedState() != journal.Initial() || len(Records(t, b)) != 0 || len(b.Faulty) != 0 || b.LastSlot() != 0 {
		t.Fatalf("fresh store boots as\n%s", Render(b))
	}
}

func testFormatRoundTrip(t *testing.T, h Harness) {
	formatted(t, h)
	b := crashSame(t, h)
	if b.Marker == nil || !b.Marker.Equal(TestMarker()) {
		t.Fatalf("marker %v, want %s", b.Marker, TestMarker())
	}
	if _, err := storage.CheckBoot(storage.ClaimExistingMember, b.Marker, TestMarker()); err != nil {
		t.Fatalf("check boot: %v", err)
	}
}

func testRefuseReformat(t *testing.T, h Harness) {
	bad := TestMarker()
	bad.Node = 9 // not a member
	if err := h.Store().Format(bad); !errors.Is(err, storage.ErrBadMarker) {
		t.Fatalf("format with a bad marker: %v, want ErrBadMarker", err)
	}
	s := formatted(t, h)
	other := TestMarker()
	other.Mode = journal.ModeMulti
	if err := s.Format(other); !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("second format: %v, want ErrFormatted", err)
	}
	h.Crash()
	if err := h.Store().Format(TestMarker()); !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("format after a crash: %v, want ErrFormatted", err)
	}
	b := boot(t, h.Store())
	if b.Marker == nil || !b.Marker.Equal(TestMarker()) {
		t.Fatalf("marker rewritten: %v", b.Marker)
	}
	if _, err := storage.CheckBoot(storage.ClaimFirstBoot, b.Marker, TestMarker()); !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("first boot on a formatted store: %v", err)
	}
}

// testBootDecisions walks every row of storage.CheckBoot's table with what
// the store's Boot reports.
func testBootDecisions(t *testing.T, h Harness) {
	want := TestMarker()
	other := TestMarker()
	other.Members = []paxos.NodeID{1, 2, 4}
	decide := func(claim storage.Claim, m storage.Marker) (storage.BootDecision, error) {
		return storage.CheckBoot(claim, boot(t, h.Store()).Marker, m)
	}
	if d, err := decide(storage.ClaimFirstBoot, want); err != nil || d != storage.DecideFormat {
		t.Fatalf("first boot, no marker: %v %v", d, err)
	}
	if _, err := decide(storage.ClaimExistingMember, want); !errors.Is(err, storage.ErrAmnesia) {
		t.Fatalf("existing member, no marker: %v, want ErrAmnesia", err)
	}
	formatted(t, h)
	h.Crash()
	if _, err := decide(storage.ClaimFirstBoot, want); !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("first boot, marker: %v, want ErrFormatted", err)
	}
	if d, err := decide(storage.ClaimExistingMember, want); err != nil || d != storage.DecideBoot {
		t.Fatalf("existing member, same marker: %v %v", d, err)
	}
	if _, err := decide(storage.ClaimExistingMember, other); !errors.Is(err, storage.ErrConfigMismatch) {
		t.Fatalf("existing member, other marker: %v, want ErrConfigMismatch", err)
	}
}

func testOrderWithinBatch(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1, b2 := ballot(1, 1), ballot(2, 1)
	mustApply(t, s, true,
		Accept(3, b1, 1), Accept(3, b2, 2), // later op wins
		Accept(4, b1, 1), Accept(5, b1, 1),
		paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 5, State: Sealed(1, 4, 1)}, // drops 3 and 4
		Accept(4, b2, 3), // below the floor now: ignored
		Accept(6, b2, 1),
	)
	b := crashSame(t, h)
	wantRecords(t, b, rec(5, b1, 1), rec(6, b2, 1))
	if b.FirstSlot() != 5 {
		t.Fatalf("floor %d, want 5", b.FirstSlot())
	}
}

func testBatchAtomicity(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1 := ballot(1, 1)
	mustApply(t, s, true, Accept(1, b1, 1))
	// An unsynced batch is lost whole.
	mustApply(t, s, false, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: ballot(5, 2)}, Accept(2, b1, 1), Accept(3, b1, 1))
	h.Crash()
	b := boot(t, h.Store())
	wantRecords(t, b, rec(1, b1, 1))
	if !b.Hard.Promised.IsZero() {
		t.Fatalf("promise %s of a lost batch survived", b.Hard.Promised)
	}
	// A synced batch makes every earlier batch durable too, in order.
	s = h.Store()
	mustApply(t, s, false, Accept(2, b1, 1))
	mustApply(t, s, false, Accept(2, b1, 2), Accept(3, b1, 1))
	mustApply(t, s, true, Accept(4, b1, 1))
	b = crashSame(t, h)
	wantRecords(t, b, rec(1, b1, 1), rec(2, b1, 2), rec(3, b1, 1), rec(4, b1, 1))
	// An empty synced batch syncs what was written before it.
	s = h.Store()
	mustApply(t, s, false, Accept(5, b1, 1))
	mustApply(t, s, true)
	b = crashSame(t, h)
	if b.LastSlot() != 5 {
		t.Fatalf("an empty synced batch did not sync the batch before it:\n%s", Render(b))
	}
}

func testUpsert(t *testing.T, h Harness) {
	s := formatted(t, h)
	mustApply(t, s, true, Accept(7, ballot(1, 1), 1))
	// A learned chosen value overwrites a stale lower-ballot accept.
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpLearned, Slot: 7, Ballot: ballot(3, 2), Command: Cmd(7, 2)})
	b := crashSame(t, h)
	wantRecords(t, b, rec(7, ballot(3, 2), 2))
	bal, cmd, ok := b.Accepted(7)
	if !ok || bal != ballot(3, 2) || !cmd.Equal(Cmd(7, 2)) {
		t.Fatalf("Accepted(7) = %s %s %v", bal, cmd, ok)
	}
	if _, _, ok := b.Accepted(6); ok {
		t.Fatalf("Accepted(6) holds a record")
	}
	mustApply(t, h.Store(), true, Accept(7, ballot(4, 1), 3))
	wantRecords(t, crashSame(t, h), rec(7, ballot(4, 1), 3))
}

func testPromise(t *testing.T, h Harness) {
	s := formatted(t, h)
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: ballot(3, 1)})
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: ballot(3, 2)})
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: ballot(3, 2)}) // equal is allowed
	b := crashSame(t, h)
	if b.InitialState().Promised != ballot(3, 2) {
		t.Fatalf("promise %s, want 3.2", b.InitialState().Promised)
	}
	defer func() {
		if recover() == nil {
			t.Fatalf("lowering the promise did not panic")
		}
	}()
	_ = h.Store().Apply([]paxos.WriteOp{{Kind: paxos.OpSetPromise, Ballot: ballot(2, 9)}}, true)
}

func testChosenIndex(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1 := ballot(1, 1)
	mustApply(t, s, true, Accept(1, b1, 1), Accept(2, b1, 1), paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 1})
	mustApply(t, s, false, paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 2}) // relaxed
	h.Crash()
	if c := boot(t, h.Store()).Hard.ChosenIndex; c != 1 && c != 2 {
		t.Fatalf("chosen index %d after a crash, want 1 or 2", c)
	}
	s = h.Store()
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 2})
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 1}) // never lowers
	if c := crashSame(t, h).Hard.ChosenIndex; c != 2 {
		t.Fatalf("chosen index %d, want 2", c)
	}
}

func testTruncate(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1 := ballot(1, 1)
	for i := paxos.Slot(1); i <= 6; i++ {
		mustApply(t, s, true, Accept(i, b1, 1))
	}
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: ballot(2, 1)}, paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 2})
	sealed := Sealed(3, 40, 7)
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 4, State: sealed})
	b := crashSame(t, h)
	wantRecords(t, b, rec(4, b1, 1), rec(5, b1, 1), rec(6, b1, 1))
	if b.FirstSlot() != 4 || b.SealedState() != sealed || b.SealedState().Term() != 3 {
		t.Fatalf("floor %d sealed %s, want 4 %s", b.FirstSlot(), b.SealedState(), sealed)
	}
	if b.Hard.ChosenIndex < 3 || b.Hard.Promised != ballot(2, 1) {
		t.Fatalf("hard state %+v after truncate", b.Hard)
	}
	// At or below the floor a truncation changes nothing; below the floor
	// an accept is ignored.
	s = h.Store()
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 3, State: Sealed(4, 50, 8)},
		paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 4, State: Sealed(4, 50, 8)}, Accept(2, b1, 2))
	b = crashSame(t, h)
	if b.FirstSlot() != 4 || b.SealedState() != sealed || b.LastSlot() != 6 || len(Records(t, b)) != 3 {
		t.Fatalf("a truncation at or below the floor moved the store:\n%s", Render(b))
	}
	// Truncating past every record leaves none; LastSlot is 0.
	mustApply(t, h.Store(), true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 10, State: Sealed(5, 60, 60)})
	b = crashSame(t, h)
	if len(Records(t, b)) != 0 || b.LastSlot() != 0 || b.FirstSlot() != 10 || b.Hard.ChosenIndex != 9 {
		t.Fatalf("after truncating everything:\n%s", Render(b))
	}
}

func testTrimmedTo(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1 := ballot(1, 1)
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: ballot(5, 3)}, Accept(2, b1, 1), Accept(12, b1, 1))
	st := Sealed(2, 100, 90)
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpTrimmedTo, Slot: 10, State: st})
	b := crashSame(t, h)
	if b.Hard.Promised != ballot(5, 3) {
		t.Fatalf("TrimmedTo touched the promise: %s", b.Hard.Promised)
	}
	if b.FirstSlot() != 10 || b.Hard.ChosenIndex < 9 || b.SealedState() != st {
		t.Fatalf("after TrimmedTo(10):\n%s", Render(b))
	}
	wantRecords(t, b, rec(12, b1, 1))
}

func testFaulty(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1, b2 := ballot(1, 1), ballot(2, 2)
	mustApply(t, s, true, Accept(1, b1, 1), Accept(2, b2, 1), Accept(3, b1, 1))
	if !h.RotValue(2) {
		t.Fatalf("RotValue(2) found no record")
	}
	if h.RotValue(9) {
		t.Fatalf("RotValue(9) damaged a record that does not exist")
	}
	b := boot(t, h.Store())
	wantRecords(t, b, rec(1, b1, 1), rec(3, b1, 1))
	if len(b.Faulty) != 1 || b.Faulty[0] != (paxos.SlotBallot{Slot: 2, Ballot: b2}) {
		t.Fatalf("faulty %v, want [(2, %s)]", b.Faulty, b2)
	}
	if _, _, ok := b.Accepted(2); ok {
		t.Fatalf("a damaged record reads as accepted")
	}
	if b.LastSlot() != 3 {
		t.Fatalf("LastSlot %d", b.LastSlot())
	}
	sc, err := h.Store().Scrub(1, 10)
	if err != nil {
		t.Fatalf("scrub: %v", err)
	}
	if len(sc) != 3 || !sc[1].Damaged || sc[1].Ballot != b2 || sc[0].Damaged || sc[2].Damaged {
		t.Fatalf("scrub %+v", sc)
	}
	// Rot survives a crash: it is on disk.
	crashSame(t, h)
	// A rewrite must name the ballot the identity kept.
	if err := h.Store().Rewrite(2, b1, Cmd(2, 1)); err == nil {
		t.Fatalf("rewrite at the wrong ballot accepted")
	}
	if err := h.Store().Rewrite(8, b1, Cmd(8, 1)); err == nil {
		t.Fatalf("rewrite of an empty slot accepted")
	}
	if err := h.Store().Rewrite(2, b2, Cmd(2, 1)); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	b = crashSame(t, h)
	wantRecords(t, b, rec(1, b1, 1), rec(2, b2, 1), rec(3, b1, 1))
	if len(b.Faulty) != 0 {
		t.Fatalf("faulty after rewrite: %v", b.Faulty)
	}
	// An accept over a damaged record replaces it too.
	h.RotValue(3)
	mustApply(t, h.Store(), true, Accept(3, ballot(4, 1), 2))
	b = crashSame(t, h)
	wantRecords(t, b, rec(1, b1, 1), rec(2, b2, 1), rec(3, ballot(4, 1), 2))
	if len(b.Faulty) != 0 {
		t.Fatalf("faulty after an accept over it: %v", b.Faulty)
	}
}

func testTruncateFaulty(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1 := ballot(1, 1)
	mustApply(t, s, true, Accept(1, b1, 1), Accept(2, b1, 1), Accept(3, b1, 1))
	h.RotValue(1)
	h.RotValue(3)
	mustApply(t, h.Store(), true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 2, State: Sealed(1, 5, 1)})
	b := crashSame(t, h)
	if len(b.Faulty) != 1 || b.Faulty[0].Slot != 3 {
		t.Fatalf("faulty %v, want only slot 3", b.Faulty)
	}
	wantRecords(t, b, rec(2, b1, 1))
}

func testScrub(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1 := ballot(1, 1)
	for i := paxos.Slot(1); i <= 9; i += 2 {
		mustApply(t, s, true, Accept(i, b1, 1))
	}
	page, err := s.Scrub(2, 2)
	if err != nil {
		t.Fatalf("scrub: %v", err)
	}
	if len(page) != 2 || page[0].Slot != 3 || page[1].Slot != 5 {
		t.Fatalf("scrub(2, 2) = %+v, want slots 3 and 5", page)
	}
	want := storage.CRC32C(storage.AppendCommand(nil, Cmd(3, 1)))
	if page[0].Hash != want || page[0].Ballot != b1 || page[0].Damaged {
		t.Fatalf("scrub entry %+v, want hash %08x", page[0], want)
	}
	if page, _ := s.Scrub(10, 5); len(page) != 0 {
		t.Fatalf("scrub past the end = %+v", page)
	}
	if page, _ := s.Scrub(1, 0); len(page) != 0 {
		t.Fatalf("scrub of 0 records = %+v", page)
	}
	if page, _ := s.Scrub(0, 100); len(page) != 5 {
		t.Fatalf("scrub of everything = %+v", page)
	}
}

func testFailedSync(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1 := ballot(1, 1)
	mustApply(t, s, true, Accept(1, b1, 1))
	h.FailNextSync()
	err := s.Apply([]paxos.WriteOp{Accept(2, b1, 1)}, true)
	var ioe *storage.IOError
	if !errors.As(err, &ioe) || ioe.Outcome != storage.OutcomeUnknown {
		t.Fatalf("failed sync: %v, want an IOError with outcome unknown", err)
	}
	if err := s.Apply([]paxos.WriteOp{Accept(3, b1, 1)}, true); !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("apply after a failed sync: %v, want ErrFailed", err)
	}
	if err := s.Apply([]paxos.WriteOp{Accept(3, b1, 1)}, false); !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("unsynced apply after a failed sync: %v, want ErrFailed", err)
	}
	if err := s.Rewrite(1, b1, Cmd(1, 2)); !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("rewrite after a failed sync: %v, want ErrFailed", err)
	}
	h.Crash()
	b := boot(t, h.Store())
	// Slot 2's outcome is unknown: either is allowed. Slot 1 was synced.
	if _, _, ok := b.Accepted(1); !ok {
		t.Fatalf("a synced record was lost:\n%s", Render(b))
	}
	if _, _, ok := b.Accepted(3); ok {
		t.Fatalf("a refused write reached the store:\n%s", Render(b))
	}
	mustApply(t, h.Store(), true, Accept(3, b1, 1))
	if _, _, ok := crashSame(t, h).Accepted(3); !ok {
		t.Fatalf("a reopened store does not take writes")
	}
}

// testColdReads: the ColdLog a boot hands the node reads back exactly the
// records applied (the upsert's latest value), dense from the asked slot; a
// slot with no record, one below the floor, or a rotted value is an
// ErrCorruption error, never a shorter answer.
func testColdReads(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1, b2 := ballot(1, 1), ballot(2, 2)
	mustApply(t, s, true, Accept(1, b1, 0), Accept(2, b1, 0), Accept(3, b1, 0), Accept(4, b1, 0), Accept(6, b1, 0))
	mustApply(t, s, true, Accept(2, b2, 1))
	cold := boot(t, s).ColdLog()
	if cold == nil {
		t.Fatal("boot handed no ColdLog")
	}
	recs, err := cold.ColdRecords(1, 5)
	if err != nil {
		t.Fatalf("cold read [1, 5): %v", err)
	}
	want := []paxos.SlotCommand{{Slot: 1, Ballot: b1, Command: Cmd(1, 0)}, {Slot: 2, Ballot: b2, Command: Cmd(2, 1)},
		{Slot: 3, Ballot: b1, Command: Cmd(3, 0)}, {Slot: 4, Ballot: b1, Command: Cmd(4, 0)}}
	if len(recs) != len(want) {
		t.Fatalf("cold read [1, 5) returned %d records, want %d", len(recs), len(want))
	}
	for i := range want {
		if recs[i].Slot != want[i].Slot || recs[i].Ballot != want[i].Ballot || !recs[i].Command.Equal(want[i].Command) {
			t.Fatalf("cold record %d = %v, want %v", i, recs[i], want[i])
		}
	}
	if _, err := cold.ColdRecords(4, 7); !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("cold read over the hole at slot 5: err %v, want ErrCorruption", err)
	}
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 3, State: Sealed(1, 3, 3)})
	if _, err := boot(t, s).ColdLog().ColdRecords(2, 4); !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("cold read below the floor: err %v, want ErrCorruption", err)
	}
	if !h.RotValue(4) {
		t.Fatal("rot of slot 4 found no record")
	}
	if _, err := boot(t, h.Store()).ColdLog().ColdRecords(3, 5); !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("cold read of a rotted value: err %v, want ErrCorruption", err)
	}
}

// testColdPrefix: a boot leaves on disk exactly the dense, intact records
// from the floor up to the durable chosen index (ColdEnd), reports every
// other record in Records, and a damaged record ends the prefix before it.
func testColdPrefix(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1 := ballot(1, 1)
	mustApply(t, s, true, Accept(1, b1, 0), Accept(2, b1, 0), Accept(3, b1, 0), Accept(4, b1, 0), Accept(5, b1, 0), Accept(6, b1, 0),
		paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 4})
	b := boot(t, s)
	if b.ColdEnd != 4 || len(b.Records) != 2 || b.Records[0].Slot != 5 || b.LastSlot() != 6 {
		t.Fatalf("chosen 4 of 6: cold through %d, records %v, last %d", b.ColdEnd, b.Records, b.LastSlot())
	}
	wantRecords(t, b, rec(1, b1, 0), rec(2, b1, 0), rec(3, b1, 0), rec(4, b1, 0), rec(5, b1, 0), rec(6, b1, 0))
	if !h.RotValue(3) {
		t.Fatal("rot of slot 3 found no record")
	}
	b = boot(t, h.Store())
	if b.ColdEnd != 2 || len(b.Records) != 3 || b.Records[0].Slot != 4 || len(b.Faulty) != 1 || b.Faulty[0].Slot != 3 {
		t.Fatalf("slot 3 rotted: cold through %d, records %v, faulty %v", b.ColdEnd, b.Records, b.Faulty)
	}
}
