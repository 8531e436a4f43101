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
