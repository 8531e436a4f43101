package storetest

// The scrubber's conformance cases (core/paxos/scrub.go): a store's Scrub
// pages are bounded and ascending and report rot as a damaged entry with
// its ballot; an OpRewrite of the same record repairs a rotted copy for good;
// the scrub cursor is a relaxed durable scalar a truncation keeps; and a
// boot hands the node both through paxos.ScrubSource.

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

func scrubCursor(s paxos.Slot) paxos.WriteOp {
	return paxos.WriteOp{Kind: paxos.OpScrubCursor, Slot: s}
}

func intactEntry(s paxos.Slot, b paxos.Ballot, v int) storage.ScrubEntry {
	return storage.ScrubEntry{Slot: s, Ballot: b, Hash: storage.CRC32C(storage.AppendCommand(nil, Cmd(s, v)))}
}

func mustScrub(t *testing.T, l paxos.ScrubLog, from paxos.Slot, count int) []storage.ScrubEntry {
	t.Helper()
	page, err := l.Scrub(from, count)
	if err != nil {
		t.Fatalf("scrub(%d, %d): %v", from, count, err)
	}
	return page
}

// testRewriteRepairsRot: a rotted record is a damaged scrub entry that
// keeps its ballot; an OpRewrite of the same (slot, ballot, value) makes it
// intact again on disk (the scrub hash is the value's, a reboot has it among
// the records and not faulty); below the floor a rewrite writes nothing.
func testRewriteRepairsRot(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1, b2 := ballot(1, 1), ballot(2, 2)
	mustApply(t, s, true, Accept(1, b1, 1), Accept(2, b2, 1), Accept(3, b1, 1))
	if !h.RotValue(2) {
		t.Fatal("RotValue(2) found no record")
	}
	page := mustScrub(t, h.Store(), 2, 1)
	if len(page) != 1 || page[0] != (storage.ScrubEntry{Slot: 2, Ballot: b2, Damaged: true}) {
		t.Fatalf("scrub of the rotted slot 2 = %+v, want damaged at %s with hash 0", page, b2)
	}

	mustApply(t, h.Store(), true, paxos.WriteOp{Kind: paxos.OpRewrite, Slot: 2, Ballot: b2, Command: Cmd(2, 1)})

	if page := mustScrub(t, h.Store(), 1, 10); len(page) != 3 || page[1] != intactEntry(2, b2, 1) {
		t.Fatalf("scrub after the rewrite = %+v, want slot 2 as %+v", page, intactEntry(2, b2, 1))
	}
	b := crashSame(t, h)
	if len(b.Faulty) != 0 {
		t.Fatalf("faulty after the rewrite: %v", b.Faulty)
	}
	if bal, cmd, ok := b.Accepted(2); !ok || bal != b2 || !cmd.Equal(Cmd(2, 1)) {
		t.Fatalf("Accepted(2) after the rewrite = %s %s %v", bal, cmd, ok)
	}
	wantRecords(t, b, rec(1, b1, 1), rec(2, b2, 1), rec(3, b1, 1))
	mustApply(t, h.Store(), true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 3, State: Sealed(1, 3, 1)},
		paxos.WriteOp{Kind: paxos.OpRewrite, Slot: 2, Ballot: b2, Command: Cmd(2, 1)})
	b = crashSame(t, h)
	if b.LastSlot() != 3 || len(Records(t, b)) != 1 {
		t.Fatalf("a rewrite below the floor wrote a record:\n%s", Render(b))
	}
}

// testScrubCursorDurable: the scrub cursor is 0 on a fresh store; it is
// relaxed (an unsynced one is durable with the next synced batch, and one
// in a synced batch survives a crash); it may move down (a new pass); a
// truncation keeps it; Boot hands it over as BootState.ScrubCursor.
func testScrubCursorDurable(t *testing.T, h Harness) {
	cursor := func() paxos.Slot {
		t.Helper()
		var src paxos.ScrubSource = boot(t, h.Store())
		return src.ScrubCursor()
	}
	if c := cursor(); c != 0 {
		t.Fatalf("scrub cursor %d on an unformatted store, want 0", c)
	}
	s := formatted(t, h)
	if c := cursor(); c != 0 {
		t.Fatalf("scrub cursor %d on a fresh store, want 0", c)
	}
	b1 := ballot(1, 1)

	mustApply(t, s, true, Accept(1, b1, 1), scrubCursor(5))
	h.Crash()
	if c := cursor(); c != 5 {
		t.Fatalf("scrub cursor %d after a crash, want 5 (its batch was synced)", c)
	}
	mustApply(t, h.Store(), false, scrubCursor(7)) // relaxed
	h.Crash()
	if c := cursor(); c != 5 && c != 7 {
		t.Fatalf("scrub cursor %d after a crash, want 5 or 7", c)
	}
	mustApply(t, h.Store(), false, scrubCursor(9))
	mustApply(t, h.Store(), true, Accept(2, b1, 1))
	h.Crash()
	if c := cursor(); c != 9 {
		t.Fatalf("scrub cursor %d, want 9: a synced batch makes the relaxed one before it durable", c)
	}

	mustApply(t, h.Store(), true, scrubCursor(2)) // a new pass starts lower
	h.Crash()
	if c := cursor(); c != 2 {
		t.Fatalf("scrub cursor %d, want 2 (it is not monotone)", c)
	}
	mustApply(t, h.Store(), true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 3, State: Sealed(1, 3, 1)})
	b := crashSame(t, h)
	if b.ScrubCursor() != 2 || b.Cursor != 2 {
		t.Fatalf("scrub cursor %d after a truncation, want 2", b.ScrubCursor())
	}
}

// testScrubPagesBounded compares every Scrub(from, count) page over a store
// with gaps, rotted records and a floor against a naive model: at most
// count entries, ascending, none below from (nor the floor), intact and
// damaged ones alike; the boot's ScrubLog scrubs the same store.
func testScrubPagesBounded(t *testing.T, h Harness) {
	s := formatted(t, h)
	b1, b2 := ballot(1, 1), ballot(2, 3)
	var ops []paxos.WriteOp
	for _, slot := range []paxos.Slot{1, 2, 3, 5, 6, 8, 9, 10, 14} {
		b := b1
		if slot%2 == 0 {
			b = b2
		}
		ops = append(ops, Accept(slot, b, int(slot)%3))
	}
	mustApply(t, s, true, ops...)
	mustApply(t, s, true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 2, State: Sealed(1, 2, 1)})
	for _, slot := range []paxos.Slot{3, 8, 14} {
		if !h.RotValue(slot) {
			t.Fatalf("RotValue(%d) found no record", slot)
		}
	}
	var model []storage.ScrubEntry // slot 1 is below the floor
	for _, op := range ops[1:] {
		e := intactEntry(op.Slot, op.Ballot, int(op.Slot)%3)
		if op.Slot == 3 || op.Slot == 8 || op.Slot == 14 {
			e = storage.ScrubEntry{Slot: op.Slot, Ballot: op.Ballot, Damaged: true}
		}
		model = append(model, e)
	}
	src := boot(t, h.Store()).ScrubLog()
	if src == nil {
		t.Fatal("boot handed no ScrubLog")
	}

	for from := paxos.Slot(0); from <= 16; from++ {
		for count := 0; count <= 10; count++ {
			var want []storage.ScrubEntry
			for _, e := range model {
				if e.Slot >= from && len(want) < count {
					want = append(want, e)
				}
			}
			for name, l := range map[string]paxos.ScrubLog{"store": h.Store(), "boot": src} {
				if got := mustScrub(t, l, from, count); !slices.Equal(got, want) {
					t.Fatalf("%s: scrub(%d, %d) = %+v, want %+v", name, from, count, got, want)
				}
			}
		}
	}
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
