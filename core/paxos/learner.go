package paxos

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// chosenValue is one chosen slot held by the learner.
type chosenValue struct {
	cmd journal.Command
	ok  bool
}

// Learner is the learner role of every node (often called the replica; not so
// here because "replica" names the replica tier, a process that runs only
// this role): the chosen log, the contiguous apply walk — the only place
// journal.Apply runs — the positions index, and reads by position. It emits
// only the relaxed SetChosenIndex.
type Learner struct {
	mode journal.WriterMode
	// Invariant: floor-1 <= applied <= chosenIndex.
	floor       Slot
	chosenIndex Slot
	applied     Slot
	// chosen holds the hot window from the acceptor's log.base up; slots
	// in [floor, chosen.base) were evicted and are read back cold.
	chosen slotLog[chosenValue]
	cold   *coldReader
	// coldChosen is the end of the boot's cold prefix: slots up to it are
	// chosen, below chosen.base, and folded by reading them back (walk).
	// Invariant: chosen.base <= max(applied, coldChosen) + 1.
	coldChosen Slot
	// foldPage holds the cold prefix's next records being folded.
	foldPage []SlotCommand
	// state is the fold of every slot <= applied.
	state journal.State
	// positions finds the slot of every applied write (positions.go).
	// heldFrom is the first position this node can produce.
	positions positionIndex
	heldFrom  journal.Seq
	// persistedChosen is the chosen index last emitted as a write.
	persistedChosen Slot
	// contract receives a peer's contract violation (contract.go).
	contract *contract
}

func newLearner(mode journal.WriterMode, floor, chosenIndex Slot, sealed journal.State) *Learner {
	r := &Learner{mode: mode, floor: floor, chosenIndex: chosenIndex, applied: floor - 1, state: sealed,
		heldFrom: sealed.NextSeq, persistedChosen: chosenIndex}
	r.chosen = newSlotLog[chosenValue](floor)
	r.cold = &coldReader{}
	r.contract = &contract{}
	r.positions = newPositionIndex(floor-1, sealed)
	return r
}

// ChosenIndex is the highest slot s such that every slot <= s is chosen here.
func (r *Learner) ChosenIndex() Slot { return r.chosenIndex }

// Applied is the highest slot folded.
func (r *Learner) Applied() Slot { return r.applied }

// State is the journal state the fold has reached.
func (r *Learner) State() journal.State { return r.state }

// Floor is the first slot the learner holds.
func (r *Learner) Floor() Slot { return r.floor }

// Covers reports whether the fold includes slot s.
func (r *Learner) Covers(s Slot) bool { return s <= r.applied }

// Chosen returns the chosen value at s if this node holds it.
func (r *Learner) Chosen(s Slot) (journal.Command, bool) {
	if r.isCold(s) {
		sc, ok := r.cold.one(ColdLookup, s)
		return sc.Command, ok
	}
	v := r.chosen.at(s)
	if v == nil || !v.ok {
		return journal.Command{}, false
	}
	return v.cmd, true
}

// isCold reports whether s was evicted from the hot window.
func (r *Learner) isCold(s Slot) bool { return s >= r.floor && s < r.chosen.base }

// markChosen records that s is chosen with cmd and advances the contiguous
// chosen index. It reports whether the index moved. An evicted slot is
// applied already: there is nothing to learn.
func (r *Learner) markChosen(s Slot, cmd journal.Command) bool {
	if s < r.chosen.base {
		return false
	}
	v := r.chosen.ensure(s)
	if v.ok {
		if !v.cmd.Equal(cmd) {
			r.contract.raise("slot %d learned as %s after %s", s, cmd, v.cmd)
			return false
		}
	} else {
		*v = chosenValue{cmd: cmd, ok: true}
	}
	moved := false
	for {
		n := r.chosen.at(r.chosenIndex + 1)
		if n == nil || !n.ok {
			break
		}
		r.chosenIndex++
		moved = true
	}
	return moved
}

// EntryAt implements journal.Positions over the positions index.
func (r *Learner) EntryAt(seq journal.Seq) (journal.Entry, journal.Held) {
	if seq < r.heldFrom {
		return journal.Entry{}, journal.NotHeld
	}
	i := r.positions.find(seq)
	if i < 0 {
		return journal.Entry{}, journal.Absent
	}
	slot := r.positions.entries[i].slot
	var c journal.Command
	var ok bool
	if r.isCold(slot) {
		var sc SlotCommand
		sc, ok = r.cold.one(ColdDedup, slot)
		c = sc.Command
	} else {
		c, ok = r.Chosen(slot)
	}
	if !ok && r.isCold(slot) {
		// The cold read failed (StorageFault is raised): the node cannot
		// tell Duplicate from Refused, like a node that no longer holds
		// the write; both leave the state alone.
		return journal.Entry{}, journal.NotHeld
	}
	if !ok || c.Kind != journal.KindWrite {
		panic(fmt.Sprintf("paxos: positions index names slot %d which holds no write", slot))
	}
	return c.Entry, journal.Found
}

// walk folds every chosen slot above applied, in order, appending one
// Applied per slot. It returns the new floor a Truncate asks for (0 if
// none): the caller drops the prefix on every role and persists the cut.
func (r *Learner) walk(out *[]Applied, cut func(floor Slot, sealed journal.State)) {
	for budget := walkSlotsMax; r.applied < r.chosenIndex && budget > 0; budget-- {
		s := r.applied + 1
		var cmd journal.Command
		if s < r.chosen.base {
			// The boot's cold prefix: chosen, on disk, read in pages. A
			// failed read stops the fold (StorageFault is raised).
			c, ok := r.coldFold(s)
			if !ok {
				return
			}
			cmd = c
		} else {
			v := r.chosen.at(s)
			if v == nil || !v.ok {
				panic(fmt.Sprintf("paxos: chosen index %d but slot %d missing", r.chosenIndex, s))
			}
			cmd = v.cmd
		}
		before := r.state
		next, outc := journal.Apply(r.state, r.mode, cmd, r)
		r.state = next
		r.applied = s
		if outc.Kind == journal.Accepted && cmd.Kind == journal.KindWrite {
			r.positions.add(outc.Seq, s)
		}
		r.positions.noteState(s, next)
		*out = append(*out, Applied{Slot: s, Command: cmd, Outcome: outc, State: next})
		if outc.Kind == journal.Trimmed && next.FirstSeq > before.FirstSeq {
			floor, sealed := r.cutPoint()
			if floor > r.floor {
				cut(floor, sealed)
			}
		}
	}
}

// walkSlotsMax bounds the slots one walk folds (one Ready's Applied), so
// a fold of a long prefix runs in pages of bounded memory.
const walkSlotsMax = 1024

// coldFold returns the chosen command of cold-prefix slot s, reading the
// prefix back a page at a time.
func (r *Learner) coldFold(s Slot) (journal.Command, bool) {
	if p := r.foldPage; len(p) == 0 || s < p[0].Slot || s >= p[0].Slot+Slot(len(p)) {
		recs, ok := r.cold.read(ColdBoot, s, min(r.chosen.base, s+coldFoldSlots))
		if !ok {
			return journal.Command{}, false
		}
		r.foldPage = recs
	}
	c := r.foldPage[s-r.foldPage[0].Slot].Command
	if s+1 >= r.chosen.base {
		r.foldPage = nil // the prefix is folded: nothing more to read
	}
	return c, true
}

// coldFoldSlots is the page of the boot's cold prefix read at once.
const coldFoldSlots = 256

// cutPoint is where a truncation to state.FirstSeq cuts the log: the slot
// holding the first retained record, sealed with the state just before it;
// or, when no record is retained, everything applied, sealed with the
// current state: every slot whose records all lie below FirstSeq is dropped
// (docs/design/core.md, "Decided truncation and the trim-point jump").
func (r *Learner) cutPoint() (Slot, journal.State) {
	first := r.state.FirstSeq
	if i := r.positions.covering(first, r.state.NextSeq); i < r.positions.len() {
		return r.positions.entries[i].slot, r.positions.before(i)
	}
	return r.applied + 1, r.state
}

// dropBelow forgets every slot below floor after a decided truncation. The
// positions index keeps only entries at or above the floor slot.
func (r *Learner) dropBelow(floor Slot) {
	if floor <= r.floor {
		return
	}
	if floor > r.applied+1 {
		panic(fmt.Sprintf("paxos: cut at %d above the fold %d", floor, r.applied))
	}
	r.floor = floor
	r.chosen.dropBelow(floor)
	if first := r.positions.dropBelow(floor); first != 0 {
		r.heldFrom = first
	} else {
		r.heldFrom = r.state.NextSeq
	}
}

// trimTo installs a trim point: everything below point is chosen and gone,
// and state is what it folded to.
func (r *Learner) trimTo(point Slot, state journal.State) {
	r.floor = point
	r.chosen.dropBelow(point)
	r.chosenIndex = max(r.chosenIndex, point-1)
	r.applied = point - 1
	r.state = state
	r.positions = newPositionIndex(point-1, state)
	r.heldFrom = state.NextSeq
	// Slots already learned above the point may now be contiguous.
	for {
		n := r.chosen.at(r.chosenIndex + 1)
		if n == nil || !n.ok {
			break
		}
		r.chosenIndex++
	}
}

// LogReadKind names the answer of a read by position.
type LogReadKind uint8

const (
	// ReadPage: Records are dense from the requested position (empty at the
	// tail).
	ReadPage LogReadKind = iota + 1
	// ReadTruncated: the position is below FirstSeq; View.FirstSeq is
	// where to resume.
	ReadTruncated
	// ReadNotHeld: the position is readable in the journal but this node no
	// longer holds it (it jumped to a trim point): answer unserved.
	ReadNotHeld
)

// LogRead is the answer of ReadLog.
type LogRead struct {
	Kind    LogReadKind
	Records [][]byte
	View    journal.View
}

// Read serves a page from the fold: at most limit records and maxBytes
// bytes, but always at least one record when one is readable.
func (r *Learner) Read(from journal.Seq, limit, maxBytes int) LogRead {
	view := r.state.View()
	if from < r.state.FirstSeq {
		return LogRead{Kind: ReadTruncated, View: view}
	}
	if from < r.heldFrom {
		return LogRead{Kind: ReadNotHeld, View: view}
	}
	if from >= r.state.NextSeq {
		return LogRead{Kind: ReadPage, View: view}
	}
	i := r.positions.covering(from, r.state.NextSeq)
	var recs [][]byte
	var cold []SlotCommand // a chunk of evicted slots read back at once
	bytes := 0
	for ; i < r.positions.len(); i++ {
		p := r.positions.entries[i]
		var c journal.Command
		if r.isCold(p.slot) {
			if len(cold) == 0 || p.slot < cold[0].Slot || p.slot >= cold[0].Slot+Slot(len(cold)) {
				var ok bool
				if cold, ok = r.cold.read(ColdPage, p.slot, min(r.chosen.base, p.slot+coldChunkSlots)); !ok {
					return LogRead{Kind: ReadNotHeld, View: view}
				}
			}
			c = cold[p.slot-cold[0].Slot].Command
		} else {
			c, _ = r.Chosen(p.slot)
		}
		for k, rec := range c.Entry.Records {
			seq := p.seq + journal.Seq(k)
			if seq < from {
				continue
			}
			if len(recs) > 0 && (len(recs) >= limit || bytes+len(rec) > maxBytes) {
				return LogRead{Kind: ReadPage, Records: recs, View: view}
			}
			recs = append(recs, rec)
			bytes += len(rec)
		}
	}
	return LogRead{Kind: ReadPage, Records: recs, View: view}
}

// chosenIndexOp returns the relaxed chosen-index write when the index moved
// since the last one.
func (r *Learner) chosenIndexOp() (WriteOp, bool) {
	if r.chosenIndex <= r.persistedChosen {
		return WriteOp{}, false
	}
	r.persistedChosen = r.chosenIndex
	return WriteOp{Kind: OpSetChosenIndex, Slot: r.chosenIndex}, true
}
