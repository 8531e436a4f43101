package paxos

import (
	"sort"

	"github.com/parosdb/paros/core/journal"
)

// positionIndex maps journal positions to the slots that hold them: one
// 16-byte entry per applied write, kept for the whole retained log (the
// records themselves leave memory with the hot window; the index is what
// finds them on disk).
//
// Writes are contiguous — each starts where the last ended — so an entry's
// record count is the next entry's seq minus its own (the last one's ends
// at the fold's NextSeq), and the journal state just before an entry's slot
// (what a truncation cutting there seals) is its seq as NextSeq with the
// fence and floor of the last state epoch before the slot. Epochs change
// only at SetLeader and Truncate slots, so they are few.
//
// Invariant: entries ascend by seq and by slot; epochs ascend by after;
// epochs[0].after < every entry's slot.
type positionIndex struct {
	entries []posEntry
	epochs  []stateEpoch
}

type posEntry struct {
	seq  journal.Seq
	slot Slot
}

// stateEpoch: the fence and floor (Leader, term, FirstSeq) in force for
// every slot above after, until the next epoch.
type stateEpoch struct {
	after Slot
	st    journal.State
}

func newPositionIndex(after Slot, st journal.State) positionIndex {
	return positionIndex{epochs: []stateEpoch{{after: after, st: st}}}
}

func (x *positionIndex) len() int { return len(x.entries) }

// add records an accepted write at seq folded from slot.
func (x *positionIndex) add(seq journal.Seq, slot Slot) {
	x.entries = append(x.entries, posEntry{seq: seq, slot: slot})
}

// noteState records the state after applying slot when its fence or floor
// moved (the next epoch).
func (x *positionIndex) noteState(slot Slot, st journal.State) {
	last := x.epochs[len(x.epochs)-1].st
	if last.Leader == st.Leader && last.Term() == st.Term() && last.FirstSeq == st.FirstSeq {
		return
	}
	x.epochs = append(x.epochs, stateEpoch{after: slot, st: st})
}

// find is the entry starting at seq, or -1.
func (x *positionIndex) find(seq journal.Seq) int {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].seq >= seq })
	if i == len(x.entries) || x.entries[i].seq != seq {
		return -1
	}
	return i
}

// end is where entry i's records end (the next entry's seq, or nextSeq for
// the last).
func (x *positionIndex) end(i int, nextSeq journal.Seq) journal.Seq {
	if i+1 < len(x.entries) {
		return x.entries[i+1].seq
	}
	return nextSeq
}

// covering is the first entry whose records reach past seq (len when none).
func (x *positionIndex) covering(seq journal.Seq, nextSeq journal.Seq) int {
	return sort.Search(len(x.entries), func(i int) bool { return x.end(i, nextSeq) > seq })
}

// before is the journal state just before entry i's slot was applied.
func (x *positionIndex) before(i int) journal.State {
	e := x.entries[i]
	k := sort.Search(len(x.epochs), func(k int) bool { return x.epochs[k].after >= e.slot }) - 1
	st := x.epochs[k].st
	// Restore cannot fail: the epoch's fields are a folded state's, and
	// NextSeq = e.seq >= that state's FirstSeq (the write was accepted at
	// the tail after it).
	b, err := journal.Restore(st.Leader, st.Term(), e.seq, st.FirstSeq)
	if err != nil {
		panic("paxos: positions index rebuilt an impossible state: " + err.Error())
	}
	return b
}

// dropBelow forgets every entry at a slot below floor and the epochs no
// later entry needs. It returns the first position still held (0 if no
// entry is).
func (x *positionIndex) dropBelow(floor Slot) journal.Seq {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].slot >= floor })
	x.entries = append(x.entries[:0:0], x.entries[i:]...)
	k := sort.Search(len(x.epochs), func(k int) bool { return x.epochs[k].after >= floor }) - 1
	if k > 0 {
		x.epochs = append(x.epochs[:0:0], x.epochs[k:]...)
	}
	if len(x.entries) == 0 {
		return 0
	}
	return x.entries[0].seq
}
