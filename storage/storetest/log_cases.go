package storetest

// The log's cases: ops apply in order and a batch is atomic across a
// crash; accepts upsert by slot; the promise is monotone; the chosen index
// is relaxed; a truncation drops the prefix and seals the journal state in
// one write; TrimmedTo never touches the promise; a damaged value is
// reported as faulty(slot, ballot) and a truncation drops it; and a failed
// sync refuses every later write until the store is reopened.

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

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
