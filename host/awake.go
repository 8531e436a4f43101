package host

import (
	"math/bits"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// awakeSet is the set of journals a tick visits: a bitset over the indices
// of h.journals. A tick used to walk every journal to find the few with
// work; with 10,000 journals, mostly quiet, the walk alone was the
// process's largest idle cost. Now a journal enters the set whenever
// anything touches it (drain, a quarantine) and a tick drops it once it
// rests, so a tick costs the awake journals plus one word per 64 journals.
// Visiting in index order keeps the tick's order the sorted journal order
// it always was (the simulator replays it bit for bit).
//
// Invariant: every journal that is not resting (Live and not quiet, or
// holding a call or read), and every Quarantined journal, has its bit set.
// A tick may clear the bit of a resting or Down journal only.
type awakeSet struct {
	bits []uint64
}

// reindex numbers the journals after the table changed (boot, a joiner, a
// created or retired journal). A journal new to the table is awake; every
// other one keeps its bit. Marking the whole table awake would make the
// next tick visit every journal after each change, and a burst of
// creations or deletions on a machine of 10,000 journals changes the
// table many times a second.
func (h *Host) reindex() {
	old := h.awake.bits
	n := (len(h.journals) + 63) / 64
	h.awake.bits = make([]uint64, n)
	for i, j := range h.journals {
		awake := !j.indexed || j.idx/64 >= len(old) || old[j.idx/64]&(1<<(j.idx%64)) != 0
		j.idx, j.indexed = i, true
		if awake {
			h.awake.bits[i/64] |= 1 << (i % 64)
		}
	}
}

// rouse marks j awake: its next tick visits it. A journal no longer in
// the table (retired, its last messages still draining) has nothing due.
func (h *Host) rouse(j *journalRT) {
	if j.idx < len(h.journals) && h.journals[j.idx] == j {
		h.awake.bits[j.idx/64] |= 1 << (j.idx % 64)
	}
}

// eachAwake calls fn for every awake journal in index order; fn returns
// false to drop the journal from the set. A journal roused during the walk
// at a later index is visited in this walk, at an earlier one in the next;
// fn may even change the table (a retire applied in a drain): the walk
// goes on over the new numbering.
func (h *Host) eachAwake(fn func(j *journalRT) bool) {
	for w := 0; w < len(h.awake.bits); w++ {
		for b := 0; b < 64; b++ {
			word := h.awake.bits[w] >> b
			if word == 0 {
				break
			}
			b += bits.TrailingZeros64(word)
			i := w*64 + b
			if i >= len(h.journals) {
				break
			}
			j := h.journals[i]
			if !fn(j) && j.idx < len(h.journals) && h.journals[j.idx] == j {
				h.awake.bits[j.idx/64] &^= 1 << (j.idx % 64)
			}
			if w >= len(h.awake.bits) {
				return
			}
		}
	}
}

// TakeTouched calls fn for the node of every Live journal drained since
// the last call, in the order first drained, and forgets them (read only;
// for the simulator's audits, and kept only while an Observer is set).
// Anything that steps, ticks or wakes a node drains it, so an audit that
// looks at these after each event sees every change at the cost of the
// journals the event touched rather than of every journal.
func (h *Host) TakeTouched(fn func(id journal.ID, n *paxos.Node)) {
	for _, j := range h.touched {
		j.touched = false
		if j.status == Live {
			fn(j.spec.ID, j.node)
		}
	}
	clear(h.touched)
	h.touched = h.touched[:0]
}

// touch notes j for TakeTouched (with an observer only: nothing takes
// them otherwise).
func (h *Host) touch(j *journalRT) {
	if h.observer != nil && !j.touched {
		j.touched = true
		h.touched = append(h.touched, j)
	}
}
