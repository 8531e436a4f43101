package memstore_test

// This file checks memstore against the storage contract
// (docs/design/storage.md, "What a store does") that the core and the checker
// rely on: a batch is durable only once Sync runs, and a Crash drops exactly
// what was not synced; accepts are upserted by slot; Truncate and TrimmedTo
// drop the records below the new floor, seal the journal state, raise the
// chosen index and never touch the promise; a lowered promise is a bug and
// panics; a rotted record keeps its identity and is reported as faulty — and
// a node booted from such a store never treats the slot as "nothing
// accepted"; Clone is a disk image independent of the store it was taken
// from. Each test builds a store by hand, applies ops, and reads it back
// through the paxos.Storage port.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
)

func bal(round uint64, node paxos.NodeID) paxos.Ballot { return paxos.Ballot{Round: round, Node: node} }

func write(rec string) journal.Command {
	return journal.Write(journal.Entry{Records: [][]byte{[]byte(rec)}})
}

func accept(slot paxos.Slot, b paxos.Ballot, c journal.Command) paxos.WriteOp {
	return paxos.WriteOp{Kind: paxos.OpAccept, Slot: slot, Ballot: b, Command: c}
}

func promise(b paxos.Ballot) paxos.WriteOp { return paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: b} }

func sealed(t *testing.T, next, first journal.Seq) journal.State {
	t.Helper()
	st, err := journal.Restore(journal.LeaderUUID{}, 0, next, first)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// slots lists the durable record slots, ascending.
func slots(s *memstore.Store) string {
	var out []paxos.Slot
	for _, r := range s.Records() {
		out = append(out, r.Slot)
	}
	return fmt.Sprint(out)
}

func expectPanic(t *testing.T, name, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), want) {
			t.Errorf("%s: recovered %v, want a panic mentioning %q", name, r, want)
		}
	}()
	f()
}

// A fresh store is a fresh journal: no promise, nothing chosen, floor 1,
// the initial journal state, no records.
func TestFreshStore(t *testing.T) {
	s := memstore.New()
	if hs := s.InitialState(); hs != (paxos.HardState{}) {
		t.Errorf("initial state %+v", hs)
	}
	if s.FirstSlot() != 1 || s.LastSlot() != 0 || s.SealedState() != journal.Initial() {
		t.Errorf("floor %d last %d sealed %s", s.FirstSlot(), s.LastSlot(), s.SealedState())
	}
	if len(s.Records()) != 0 || len(s.FaultyEntries()) != 0 || s.Pending() != 0 || s.Syncs != 0 {
		t.Errorf("records %v faulty %v pending %d syncs %d", s.Records(), s.FaultyEntries(), s.Pending(), s.Syncs)
	}
}

// Persist, then sync, then send. Append only queues;
// the Storage port reads the durable state, which moves at Sync, batch by
// batch in order.
func TestAppendIsNotDurableUntilSync(t *testing.T) {
	s := memstore.New()
	s.Append([]paxos.WriteOp{promise(bal(1, 2)), accept(3, bal(1, 2), write("x"))})
	s.Append([]paxos.WriteOp{{Kind: paxos.OpSetChosenIndex, Slot: 3}})
	s.Append(nil) // an empty batch is not a batch

	if s.Pending() != 2 {
		t.Fatalf("pending %d, want 2", s.Pending())
	}
	if hs := s.InitialState(); hs != (paxos.HardState{}) {
		t.Fatalf("unsynced promise visible: %+v", hs)
	}
	if _, _, ok := s.Accepted(3); ok {
		t.Fatalf("unsynced accept visible")
	}

	s.Sync()
	if hs := s.InitialState(); hs != (paxos.HardState{Promised: bal(1, 2), ChosenIndex: 3}) {
		t.Fatalf("after sync: %+v", hs)
	}
	if b, c, ok := s.Accepted(3); !ok || b != bal(1, 2) || !c.Equal(write("x")) {
		t.Fatalf("after sync: record 3 = %v %s %s", ok, b, c)
	}
	if s.Pending() != 0 || s.Syncs != 1 || s.LastSlot() != 3 {
		t.Fatalf("pending %d syncs %d last %d", s.Pending(), s.Syncs, s.LastSlot())
	}
	s.Sync() // nothing pending: not counted
	if s.Syncs != 1 {
		t.Fatalf("an empty sync was counted: %d", s.Syncs)
	}
}

// A node reuses its Ready buffers: Append must copy the batch.
func TestAppendCopiesTheBatch(t *testing.T) {
	s := memstore.New()
	batch := []paxos.WriteOp{accept(1, bal(1, 1), write("x"))}
	s.Append(batch)
	batch[0] = accept(1, bal(1, 1), write("overwritten"))
	s.Sync()
	if _, c, _ := s.Accepted(1); !c.Equal(write("x")) {
		t.Fatalf("the store kept the caller's buffer: %s", c)
	}
}

// A crash loses exactly what was written since the last sync.
func TestCrashDropsUnsynced(t *testing.T) {
	s := memstore.New()
	s.Append([]paxos.WriteOp{promise(bal(1, 1)), accept(1, bal(1, 1), write("kept"))})
	s.Sync()
	s.Append([]paxos.WriteOp{promise(bal(2, 2)), accept(2, bal(2, 2), write("lost"))})
	s.Crash()
	if s.Pending() != 0 {
		t.Fatalf("pending after crash: %d", s.Pending())
	}
	s.Sync()
	if p := s.InitialState().Promised; p != bal(1, 1) {
		t.Fatalf("promise after crash %s, want 1.1", p)
	}
	if got := slots(s); got != "[1]" {
		t.Fatalf("records after crash %s, want [1]", got)
	}
}

// AppendAccepted upserts by slot — a chosen value
// learned later overwrites a stale lower-ballot accept; Learned records are
// stored the same way; the chosen index never moves back.
func TestOpsUpsertBySlot(t *testing.T) {
	s := memstore.New()
	s.Append([]paxos.WriteOp{
		accept(2, bal(1, 1), write("stale")),
		accept(5, bal(1, 1), write("y")),
		accept(2, bal(3, 2), write("chosen")),
		{Kind: paxos.OpLearned, Slot: 7, Ballot: bal(2, 3), Command: journal.Noop()},
		{Kind: paxos.OpSetChosenIndex, Slot: 7},
		{Kind: paxos.OpSetChosenIndex, Slot: 4},
	})
	s.Sync()
	if b, c, _ := s.Accepted(2); b != bal(3, 2) || !c.Equal(write("chosen")) {
		t.Fatalf("slot 2: %s %s", b, c)
	}
	if _, c, ok := s.Accepted(7); !ok || !c.Equal(journal.Noop()) {
		t.Fatalf("learned slot 7: %v %s", ok, c)
	}
	if got := slots(s); got != "[2 5 7]" {
		t.Fatalf("records %s", got)
	}
	if s.LastSlot() != 7 || s.InitialState().ChosenIndex != 7 {
		t.Fatalf("last %d chosen %d", s.LastSlot(), s.InitialState().ChosenIndex)
	}
}

// Decided truncation: Truncate and TrimmedTo move the durable floor, drop
// every record (and faulty mark) below it, seal the journal state, raise
// the chosen index to at least floor-1 — and never touch the promise. A
// floor at or below the current one is ignored, and an accept below the
// floor is not stored.
func TestTruncateAndTrimmedTo(t *testing.T) {
	for _, kind := range []paxos.OpKind{paxos.OpTruncate, paxos.OpTrimmedTo} {
		t.Run(kind.String(), func(t *testing.T) {
			s := memstore.New()
			var ops []paxos.WriteOp
			ops = append(ops, promise(bal(4, 2)))
			for slot := paxos.Slot(1); slot <= 6; slot++ {
				ops = append(ops, accept(slot, bal(1, 1), write(fmt.Sprint(slot))))
			}
			ops = append(ops, paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 2})
			s.Append(ops)
			s.Sync()
			s.Rot(3)
			s.Rot(5)

			st := sealed(t, 9, 4)
			s.Append([]paxos.WriteOp{{Kind: kind, Slot: 4, State: st}})
			s.Sync()
			if s.FirstSlot() != 4 || s.SealedState() != st {
				t.Fatalf("floor %d sealed %s", s.FirstSlot(), s.SealedState())
			}
			if got := slots(s); got != "[4 6]" {
				t.Fatalf("records %s, want [4 6]", got)
			}
			if f := s.FaultyEntries(); len(f) != 1 || f[0].Slot != 5 {
				t.Fatalf("faulty %v, want slot 5 only", f)
			}
			if hs := s.InitialState(); hs != (paxos.HardState{Promised: bal(4, 2), ChosenIndex: 3}) {
				t.Fatalf("hard state %+v: promise untouched, chosen raised to 3", hs)
			}

			// a lower or equal floor is ignored; an accept below the floor too.
			s.Append([]paxos.WriteOp{{Kind: kind, Slot: 2, State: sealed(t, 1, 1)}, {Kind: kind, Slot: 4, State: sealed(t, 1, 1)},
				accept(1, bal(5, 5), write("below"))})
			s.Sync()
			if s.FirstSlot() != 4 || s.SealedState() != st || slots(s) != "[4 6]" {
				t.Fatalf("a stale floor moved the store: floor %d sealed %s records %s", s.FirstSlot(), s.SealedState(), slots(s))
			}

			// a floor past every record empties the log.
			s.Append([]paxos.WriteOp{{Kind: kind, Slot: 10, State: sealed(t, 12, 12)}})
			s.Sync()
			if s.LastSlot() != 0 || len(s.FaultyEntries()) != 0 || s.InitialState().ChosenIndex != 9 {
				t.Fatalf("last %d faulty %v chosen %d", s.LastSlot(), s.FaultyEntries(), s.InitialState().ChosenIndex)
			}
		})
	}
}

// The promise never decreases (SetPromise is monotone, or a restarted
// acceptor could vote against what it promised); a store asked to lower it
// found a bug and panics at Sync. An op of unknown kind panics too.
func TestStorePanicsOnBugs(t *testing.T) {
	s := memstore.New()
	s.Append([]paxos.WriteOp{promise(bal(3, 1))})
	s.Sync()
	s.Append([]paxos.WriteOp{promise(bal(3, 1))}) // equal: fine
	s.Sync()
	s.Append([]paxos.WriteOp{promise(bal(2, 9))})
	expectPanic(t, "lower promise", "promise lowered", s.Sync)

	s = memstore.New()
	s.Append([]paxos.WriteOp{{Kind: paxos.OpInvalid}})
	expectPanic(t, "invalid op", "unknown op", s.Sync)
	s = memstore.New()
	s.Append([]paxos.WriteOp{{Kind: paxos.OpKind(99)}})
	expectPanic(t, "unknown op", "unknown op", s.Sync)
}

// CTRL (docs/design/ctrl.md): Rot destroys a record's value and keeps its
// identity; FaultyEntries reports it in slot order and LastSlot still
// counts it; a later accept at that slot clears the mark.
func TestRotReportsFaultyEntries(t *testing.T) {
	s := memstore.New()
	s.Append([]paxos.WriteOp{accept(4, bal(2, 1), write("a")), accept(2, bal(1, 3), write("b")), accept(9, bal(1, 1), write("c"))})
	s.Sync()
	if s.Rot(5) {
		t.Fatalf("rotted a slot with no record")
	}
	if !s.Rot(9) || !s.Rot(4) || !s.Rot(2) {
		t.Fatalf("Rot of a held record reported false")
	}
	if s.Rot(4) {
		t.Fatalf("rotted a slot twice")
	}
	if got := fmt.Sprint(s.FaultyEntries()); got != "[{2 1.0000000000000003} {4 2.0000000000000001} {9 1.0000000000000001}]" {
		t.Fatalf("faulty %s", got)
	}
	if b, ok := s.FaultyAt(4); !ok || b != bal(2, 1) {
		t.Fatalf("FaultyAt(4) = %s %v", b, ok)
	}
	if _, ok := s.FaultyAt(5); ok {
		t.Fatalf("FaultyAt(5) reports a slot that never held a record")
	}
	if _, _, ok := s.Accepted(4); ok {
		t.Fatalf("a rotted record still reads as accepted")
	}
	if s.LastSlot() != 9 || len(s.Records()) != 0 {
		t.Fatalf("last %d records %v", s.LastSlot(), s.Records())
	}
	s.Append([]paxos.WriteOp{accept(4, bal(5, 2), write("fresh"))})
	s.Sync()
	if got := fmt.Sprint(s.FaultyEntries()); got != "[{2 1.0000000000000003} {9 1.0000000000000001}]" {
		t.Fatalf("faulty after a fresh accept %s", got)
	}
}

// A node booted from a store with a rotted record never treats the slot as
// "nothing accepted": the acceptor keeps it as faulty, the chosen prefix
// stops before it, and a Prepare is answered with it.
func TestBootedNodeKeepsFaultyRecord(t *testing.T) {
	s := memstore.New()
	s.Append([]paxos.WriteOp{promise(bal(1, 2)), accept(1, bal(1, 2), write("a")), accept(2, bal(1, 2), write("b")),
		accept(3, bal(1, 2), write("c")), {Kind: paxos.OpSetChosenIndex, Slot: 3}})
	s.Sync()
	s.Rot(2)

	sys, err := quorum.NewMajority([]quorum.ID{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	n, err := paxos.NewNode(paxos.Config{ID: 1, Acceptors: sys, Mode: journal.ModeMulti}, paxos.Options{}, s)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := n.Acceptor().Faulty(2); !ok || b != bal(1, 2) {
		t.Fatalf("faulty(2) = %s %v", b, ok)
	}
	if _, _, ok := n.Acceptor().Record(2); ok {
		t.Fatalf("the rotted record reads as held")
	}
	if n.ChosenIndex() != 1 || n.Acceptor().LastSlot() != 3 {
		t.Fatalf("chosen %d last %d: the chosen prefix must stop before the faulty slot", n.ChosenIndex(), n.Acceptor().LastSlot())
	}
	n.Step(paxos.Message{Type: paxos.MsgPrepare, From: 3, To: 1, Ballot: bal(2, 3), Slot: 2})
	rd := n.Ready()
	var found bool
	for _, m := range rd.Messages {
		if m.Type == paxos.MsgPromise {
			found = true
			if len(m.Faulty) != 1 || m.Faulty[0] != (paxos.SlotBallot{Slot: 2, Ballot: bal(1, 2)}) || len(m.Entries) != 1 || m.Entries[0].Slot != 3 {
				t.Fatalf("promise reports entries %v faulty %v", m.Entries, m.Faulty)
			}
		}
	}
	if !found {
		t.Fatalf("no promise in %v", rd.Messages)
	}
	n.Advance()
}

// Clone is a disk image: the durable state now, independent of the store
// it was taken from in both directions, without the pending writes.
func TestCloneIsIndependent(t *testing.T) {
	s := memstore.New()
	s.Append([]paxos.WriteOp{promise(bal(1, 1)), accept(1, bal(1, 1), write("a")), accept(2, bal(1, 1), write("b"))})
	s.Sync()
	s.Rot(2)
	s.Append([]paxos.WriteOp{accept(3, bal(1, 1), write("pending"))})

	c := s.Clone()
	if c.Pending() != 0 {
		t.Fatalf("the clone copied pending writes")
	}
	s.Sync()
	s.Append([]paxos.WriteOp{promise(bal(4, 4)), accept(1, bal(4, 4), write("changed")),
		{Kind: paxos.OpTruncate, Slot: 3, State: sealed(t, 2, 2)}})
	s.Sync()
	s.Rot(3)

	if c.InitialState().Promised != bal(1, 1) || c.FirstSlot() != 1 || c.SealedState() != journal.Initial() {
		t.Fatalf("clone moved with the original: %+v floor %d", c.InitialState(), c.FirstSlot())
	}
	if _, v, _ := c.Accepted(1); !v.Equal(write("a")) {
		t.Fatalf("clone's slot 1: %s", v)
	}
	if got := fmt.Sprint(c.FaultyEntries()); got != "[{2 1.0000000000000001}]" {
		t.Fatalf("clone's faulty %s", got)
	}

	c.Append([]paxos.WriteOp{accept(7, bal(9, 9), write("clone only"))})
	c.Sync()
	c.Rot(1)
	if _, _, ok := s.Accepted(7); ok {
		t.Fatalf("a write to the clone reached the original")
	}
	if _, _, ok := s.Accepted(1); ok {
		t.Fatalf("slot 1 should be below the original's floor")
	}
	if got := fmt.Sprint(s.FaultyEntries()); got != "[{3 1.0000000000000001}]" {
		t.Fatalf("original's faulty %s", got)
	}
}

func testMarker() storage.Marker {
	return storage.Marker{Journal: journal.ID{Tenant: 1, Journal: 2}, Node: 1, Members: []paxos.NodeID{1, 2, 3},
		Mode: journal.ModeSingle}
}

// Clone carries the format marker, and a clone's marker is its own.
func TestCloneKeepsTheMarker(t *testing.T) {
	s := memstore.New()
	if err := s.Format(testMarker()); err != nil {
		t.Fatal(err)
	}
	c := s.Clone()
	s.Wipe()
	b, err := c.Boot()
	if err != nil || b.Marker == nil || !b.Marker.Equal(testMarker()) {
		t.Fatalf("clone's marker after the original was wiped: %v %v", b.Marker, err)
	}
	b.Marker.Members[0] = 9
	if b2, _ := c.Boot(); b2.Marker.Members[0] != 1 {
		t.Fatalf("Boot handed out the clone's own member slice")
	}
}

// Wipe loses the whole disk, marker included: what is left boots as a
// fresh, unformatted store (amnesia, which the host must refuse).
func TestWipeLosesEverything(t *testing.T) {
	s := memstore.New()
	if err := s.Format(testMarker()); err != nil {
		t.Fatal(err)
	}
	s.Append([]paxos.WriteOp{promise(bal(2, 1)), accept(1, bal(2, 1), write("x"))})
	s.Sync()
	s.Append([]paxos.WriteOp{accept(2, bal(2, 1), write("y"))})
	s.Wipe()
	b, err := s.Boot()
	if err != nil || b.Marker != nil {
		t.Fatalf("wiped store still formatted: %v %v", b.Marker, err)
	}
	if hs := s.InitialState(); hs != (paxos.HardState{}) || len(s.Records()) != 0 || s.Pending() != 0 || s.FirstSlot() != 1 {
		t.Fatalf("wiped store kept state: %+v records %v pending %d", hs, s.Records(), s.Pending())
	}
	if err := s.Format(testMarker()); err != nil {
		t.Fatalf("a wiped store cannot be formatted again: %v", err)
	}
}
