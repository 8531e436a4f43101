package storetest

// The cold-read cases (core/paxos/cold.go): the ColdLog a boot hands the
// node reads back exactly what was durable, and a boot leaves the dense,
// intact chosen prefix on disk.

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

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
